//! Unit tests of the pure parts: config parsing, URL screening, PNG size.

use crate::BrowserConfig;

#[test]
fn config_defaults_and_seconds() {
    let config: BrowserConfig =
        serde_json::from_value(serde_json::json!({ "idle_timeout": 1.5, "max_contexts": 2 })).unwrap();
    assert_eq!(config.idle_timeout, std::time::Duration::from_millis(1500));
    assert_eq!(config.max_contexts, 2);
    assert_eq!(config.call_timeout, std::time::Duration::from_secs(30));
    assert_eq!(config.viewport.width, 1280);
    assert!(serde_json::from_value::<BrowserConfig>(serde_json::json!({ "nope": 1 })).is_err());
}

#[test]
fn png_size_reads_ihdr() {
    // A 3×2 PNG header (signature + IHDR), base64.
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend_from_slice(&3u32.to_be_bytes());
    bytes.extend_from_slice(&2u32.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0]);
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    assert_eq!(crate::session::png_size(&encoded), Some((3, 2)));
    assert_eq!(crate::session::png_size("aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBwbmcgZmlsZQ=="), None);
}
