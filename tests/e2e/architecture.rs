//! ARCHITECTURE.md's code map against the workspace: every crate under `crates/` has a row,
//! and each row names exactly the wright crates its `Cargo.toml` depends on (normal
//! dependencies). A new edge between our crates is a design change: the map changes with it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The wright crates each crate's `[dependencies]` names.
fn manifests() -> BTreeMap<String, BTreeSet<String>> {
    let mut crates = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else { continue };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut section = String::new();
        let mut depends = BTreeSet::new();
        for line in manifest.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.to_owned();
            } else if section == "[dependencies]"
                && line.starts_with("wright-")
                && let Some(dependency) = line.split(['.', ' ', '=']).next()
            {
                depends.insert(dependency.to_owned());
            }
        }
        crates.insert(name, depends);
    }
    crates
}

/// The code map's rows: crate → the crates in its "depends on" column.
fn code_map() -> BTreeMap<String, BTreeSet<String>> {
    let architecture = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let ticked = |cell: &str| -> BTreeSet<String> { cell.split('`').skip(1).step_by(2).map(str::to_owned).collect() };
    architecture
        .lines()
        .filter(|line| line.starts_with("| `wright-"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            let name = ticked(cells[1]).into_iter().next().unwrap();
            (name, ticked(cells[2]))
        })
        .collect()
}

#[test]
fn the_code_map_names_every_crate_and_exactly_its_dependencies() {
    let manifests = manifests();
    let map = code_map();
    assert_eq!(
        map.keys().collect::<Vec<_>>(),
        manifests.keys().collect::<Vec<_>>(),
        "ARCHITECTURE.md's code map must have one row per crate"
    );
    for (name, depends) in &manifests {
        assert_eq!(&map[name], depends, "ARCHITECTURE.md's code map row for {name}");
    }
}

#[test]
fn the_architecture_page_stays_a_map() {
    let architecture = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    assert!(architecture.lines().count() <= 300, "ARCHITECTURE.md is a map of at most 300 lines");
}
