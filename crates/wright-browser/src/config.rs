//! Browser configuration, parsed once by the binary and passed down. No environment reads here:
//! the only lookup is the search for a Chromium executable on `PATH` when none is configured.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// How the browser is started and how long things may take.
///
/// Durations are given in seconds (fractions allowed) in config files.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserConfig {
    /// Chromium executable. `None`: the first of `chromium`, `chromium-browser`,
    /// `google-chrome`, `google-chrome-stable` on `PATH`, else `/usr/bin/chromium`.
    pub chromium_path: Option<PathBuf>,
    /// Use an already running browser at this DevTools URL (`ws://…/devtools/browser/…`, or
    /// `http://host:port` to look the websocket up) instead of launching one.
    pub cdp_url: Option<String>,
    /// Upper bound on each operation (navigate, click, screenshot …), in seconds. Default 30.
    #[serde(with = "seconds")]
    pub call_timeout: Duration,
    /// How long an element is waited for before a selector counts as matching nothing. Default 5.
    #[serde(with = "seconds")]
    pub selector_wait: Duration,
    /// A conversation's context is closed after this long without a call. Default 600.
    #[serde(with = "seconds")]
    pub idle_timeout: Duration,
    /// Upper bound on starting Chromium and reading its DevTools address. Default 20.
    #[serde(with = "seconds")]
    pub launch_timeout: Duration,
    /// At most this many conversation contexts are open at once; opening one more closes the
    /// least recently used (its next call says its session was lost). Default 8.
    pub max_contexts: usize,
    /// Page viewport in CSS pixels. Default 1280×800.
    pub viewport: Viewport,
    /// Extra Chromium switches, without the leading `--` (e.g. `"lang=en-US"`). Proxy switches
    /// are refused at launch: the egress proxy is how every connection is checked.
    pub extra_args: Vec<String>,
}

/// Page size in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport { width: 1280, height: 800 }
    }
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            chromium_path: None,
            cdp_url: None,
            call_timeout: Duration::from_secs(30),
            selector_wait: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(600),
            launch_timeout: Duration::from_secs(20),
            max_contexts: 8,
            viewport: Viewport::default(),
            extra_args: Vec::new(),
        }
    }
}

impl BrowserConfig {
    /// The executable that will be launched: the configured one, else the first known name
    /// found on `PATH`, else Debian's `/usr/bin/chromium` (which may not exist; launching then
    /// fails with a clear [`crate::BrowserError::Launch`]).
    pub fn resolved_chromium_path(&self) -> PathBuf {
        if let Some(path) = &self.chromium_path {
            return path.clone();
        }
        find_chromium().unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
    }
}

/// Looks for a Chromium-family executable on `PATH`, then at Debian's path.
pub fn find_chromium() -> Option<PathBuf> {
    const NAMES: [&str; 4] = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    for name in NAMES {
        for dir in std::env::split_paths(&path_var) {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Some(candidate);
            }
        }
    }
    let debian = Path::new("/usr/bin/chromium");
    is_executable(debian).then(|| debian.to_path_buf())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Durations as (possibly fractional) seconds, the unit people write in config files.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}
