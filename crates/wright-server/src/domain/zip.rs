//! Reading a ZIP archive of a skill folder (as skills are shared: a zipped folder), with the
//! deflate the binary already has (`miniz_oxide`) instead of a ZIP library.
//!
//! Only what skill archives use is read: stored and deflated entries of a plain (not ZIP64,
//! not encrypted) archive, found through its central directory. Everything an archive says is
//! hostile: the entry count, each entry's declared size and the total are capped before
//! anything is inflated, inflation stops at the declared size (a "zip bomb" cannot grow past
//! it), and each entry's CRC-32 must match what it inflated to.

use std::collections::BTreeMap;

use super::DomainError;

/// The most entries read from one archive.
pub const MAX_ENTRIES: usize = 256;
/// The most bytes all entries may inflate to.
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

const END_OF_DIRECTORY: u32 = 0x0605_4b50;
const DIRECTORY_ENTRY: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;

fn invalid(message: impl Into<String>) -> DomainError {
    DomainError::Invalid(format!("not a readable ZIP archive: {}", message.into()))
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16, DomainError> {
    bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]])).ok_or_else(|| invalid("it ends early"))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, DomainError> {
    bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok_or_else(|| invalid("it ends early"))
}

/// CRC-32 (IEEE), bit by bit: archives here are small.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// The files of an archive, path → bytes (directories left out).
pub fn unzip(archive: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, DomainError> {
    // The end-of-directory record is the last thing in the file, before a comment of at most
    // 65,535 bytes.
    let earliest = archive.len().saturating_sub(22 + 65_535);
    let end = (earliest..archive.len().saturating_sub(21))
        .rev()
        .find(|&at| u32_at(archive, at).is_ok_and(|signature| signature == END_OF_DIRECTORY))
        .ok_or_else(|| invalid("no end of its central directory"))?;
    let entries = usize::from(u16_at(archive, end + 10)?);
    if entries > MAX_ENTRIES {
        return Err(invalid(format!("{entries} entries; at most {MAX_ENTRIES}")));
    }
    let mut at = u32_at(archive, end + 16)? as usize;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for _ in 0..entries {
        if u32_at(archive, at)? != DIRECTORY_ENTRY {
            return Err(invalid("a broken central directory"));
        }
        let flags = u16_at(archive, at + 8)?;
        let method = u16_at(archive, at + 10)?;
        let crc = u32_at(archive, at + 16)?;
        let packed = u32_at(archive, at + 20)?;
        let size = u32_at(archive, at + 24)?;
        let name_length = usize::from(u16_at(archive, at + 28)?);
        let extra_length = usize::from(u16_at(archive, at + 30)?);
        let comment_length = usize::from(u16_at(archive, at + 32)?);
        let local = u32_at(archive, at + 42)? as usize;
        let name = archive.get(at + 46..at + 46 + name_length).ok_or_else(|| invalid("it ends early"))?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| invalid("a file name that is not UTF-8"))?;
        at += 46 + name_length + extra_length + comment_length;
        if flags & 1 == 1 {
            return Err(invalid(format!("{name} is encrypted")));
        }
        if packed == u32::MAX || size == u32::MAX {
            return Err(invalid("ZIP64 archives are not read"));
        }
        if name.ends_with('/') {
            continue;
        }
        total += u64::from(size);
        if total > MAX_TOTAL_BYTES {
            return Err(invalid(format!("its files inflate to more than {MAX_TOTAL_BYTES} bytes")));
        }
        if u32_at(archive, local)? != LOCAL_HEADER {
            return Err(invalid(format!("{name} has no local header")));
        }
        let start = local + 30 + usize::from(u16_at(archive, local + 26)?) + usize::from(u16_at(archive, local + 28)?);
        let data = archive.get(start..start + packed as usize).ok_or_else(|| invalid("it ends early"))?;
        let content = match method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, size as usize)
                .map_err(|_| invalid(format!("{name} does not inflate to its declared size")))?,
            other => {
                return Err(invalid(format!(
                    "{name} uses compression method {other}; only stored and deflate are read"
                )));
            }
        };
        if content.len() != size as usize || crc32(&content) != crc {
            return Err(invalid(format!("{name} does not match its checksum")));
        }
        files.insert(name, content);
    }
    Ok(files)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ZIP archive of `files`, each stored or deflated, as zip tools write them.
    pub(crate) fn zip(files: &[(&str, &[u8], bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut directory = Vec::new();
        for (name, content, deflate) in files {
            let data = if *deflate { miniz_oxide::deflate::compress_to_vec(content, 6) } else { content.to_vec() };
            let offset = out.len() as u32;
            let header = |signature: u32, central: bool| {
                let mut record = signature.to_le_bytes().to_vec();
                if central {
                    record.extend(20u16.to_le_bytes()); // made by
                }
                record.extend(20u16.to_le_bytes()); // version needed
                record.extend(0u16.to_le_bytes()); // flags
                record.extend(if *deflate { 8u16 } else { 0u16 }.to_le_bytes());
                record.extend([0, 0, 0, 0]); // time, date
                record.extend(crc32(content).to_le_bytes());
                record.extend((data.len() as u32).to_le_bytes());
                record.extend((content.len() as u32).to_le_bytes());
                record.extend((name.len() as u16).to_le_bytes());
                record.extend(0u16.to_le_bytes()); // extra
                if central {
                    record.extend([0u8; 10]); // comment length, disk, internal and external attributes
                    record.extend(offset.to_le_bytes());
                }
                record.extend(name.as_bytes());
                record
            };
            out.extend(header(LOCAL_HEADER, false));
            out.extend(&data);
            directory.extend(header(DIRECTORY_ENTRY, true));
        }
        let directory_offset = out.len() as u32;
        out.extend(&directory);
        out.extend(END_OF_DIRECTORY.to_le_bytes());
        out.extend([0, 0, 0, 0]);
        out.extend((files.len() as u16).to_le_bytes());
        out.extend((files.len() as u16).to_le_bytes());
        out.extend((directory.len() as u32).to_le_bytes());
        out.extend(directory_offset.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    #[test]
    fn stored_and_deflated_entries_are_read_and_checked() {
        let text = "# Fields\n".repeat(50);
        let archive =
            zip(&[("pdf-forms/SKILL.md", b"---\nname: x\n", false), ("pdf-forms/fields.md", text.as_bytes(), true)]);
        let files = unzip(&archive).unwrap();
        assert_eq!(files["pdf-forms/SKILL.md"], b"---\nname: x\n");
        assert_eq!(files["pdf-forms/fields.md"], text.as_bytes());
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn broken_or_hostile_archives_are_refused() {
        assert!(unzip(b"not a zip").unwrap_err().to_string().contains("no end of its central directory"));
        let mut corrupt = zip(&[("a.md", b"hello world", false)]);
        corrupt[30 + 4] ^= 0xff; // a byte of the stored content
        assert!(unzip(&corrupt).unwrap_err().to_string().contains("checksum"));
        // An entry that claims a small size but inflates to more stops at the claim.
        let big = vec![b'a'; 100_000];
        let mut bomb = zip(&[("a.md", &big, true)]);
        let directory = bomb.len() - 22 - 46 - 4;
        bomb[directory + 24..directory + 28].copy_from_slice(&10u32.to_le_bytes());
        assert!(unzip(&bomb).is_err());
    }
}
