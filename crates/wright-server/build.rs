//! Embeds the built canvas (`frontend/dist`) in the `wright` binary, gzip-compressed, so the
//! binary serves the app from any directory (see `src/api/canvas.rs`).
//!
//! Writes `$OUT_DIR/canvas/*.gz` and `$OUT_DIR/canvas.rs`, a table of the files: path, content
//! type, ETag, whether the name carries a content hash, and the compressed bytes
//! (`include_bytes!`). When the canvas has not been built (a fresh clone: `frontend/dist` is
//! made by `npm run build`), the table is empty and the binary answers with a page saying so;
//! the Rust tests do not need the canvas.
//!
//! Rebuilt when anything under `frontend/dist` changes; while it does not exist, when anything
//! under `frontend/` does (cargo reruns a build script every time for a path that is missing,
//! so the folder that will hold it is watched instead).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let frontend = manifest_dir.join("../../frontend");
    let dist = frontend.join("dist");
    let built = dist.join("index.html").is_file();
    if built {
        println!("cargo:rerun-if-changed={}", dist.display());
    } else {
        println!("cargo:rerun-if-changed={}", frontend.display());
        println!(
            "cargo:warning=frontend/dist is not built: this wright binary serves a page that says so instead of the \
             canvas (run `npm ci && npm run build` in frontend/, then build again)"
        );
    }

    let mut files = Vec::new();
    if built {
        collect(&dist, &dist, &mut files);
    }
    files.sort();
    let blobs = out_dir.join("canvas");
    // Files of an earlier build must not linger (a renamed asset).
    if blobs.exists() {
        std::fs::remove_dir_all(&blobs).expect("remove the old embedded canvas");
    }
    std::fs::create_dir_all(&blobs).expect("create the embedded canvas folder");

    let mut table = String::from("&[\n");
    for (index, path) in files.iter().enumerate() {
        let bytes = std::fs::read(dist.join(path)).unwrap_or_else(|error| panic!("read frontend/dist/{path}: {error}"));
        let crc = crc32(&bytes);
        let compressed = gzip(&bytes, crc);
        let blob = blobs.join(format!("{index}.gz"));
        std::fs::write(&blob, &compressed).expect("write an embedded file");
        // Vite names what it emits under assets/ after a hash of the content.
        let immutable = path.starts_with("assets/");
        writeln!(
            table,
            "    Asset {{ path: {path:?}, content_type: {content_type:?}, etag: \"\\\"{crc:08x}-{length:x}\\\"\", \
             immutable: {immutable}, gzip: include_bytes!({blob:?}) }},",
            content_type = content_type(path),
            length = bytes.len(),
            blob = blob.display().to_string(),
        )
        .expect("write to a String");
    }
    table.push(']');
    std::fs::write(out_dir.join("canvas.rs"), table).expect("write the embedded canvas table");
}

/// Every file under `dir`, as a `/`-separated path relative to `root`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|error| panic!("read {}: {error}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            let parts: Vec<String> =
                relative.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
            files.push(parts.join("/"));
        }
    }
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("webp") => "image/webp",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// A gzip member (RFC 1952) around raw DEFLATE: a fixed header with no name or time (the
/// output depends on the content only), the data, its CRC-32 and length.
fn gzip(bytes: &[u8], crc: u32) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
    out.extend(miniz_oxide::deflate::compress_to_vec(bytes, 9));
    out.extend(crc.to_le_bytes());
    // ISIZE is the length modulo 2^32
    out.extend(((bytes.len() & 0xffff_ffff) as u32).to_le_bytes());
    out
}

/// CRC-32 (IEEE), bit by bit: a megabyte of canvas at build time needs no table.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}
