//! Finds the YAML frontmatter of a SKILL.md, line by line.
//!
//! The frontmatter runs from the first line that trims to `---` to the next
//! such line. A `---` inside a value never cuts it (the reference validator
//! splits on the substring and silently truncates such values; we do not).
//! A UTF-8 byte order mark is stripped and CRLF line ends are accepted; both
//! are reported so strict mode can refuse what the reference validator
//! refuses. Line numbers are 1-based and count from the top of the file.
//!
//! Discovery reads only the head of each file ([`read_head`]): the body is
//! left on disk until someone needs it.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read};

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Size of the first read when looking for the end of the frontmatter
/// (most frontmatter fits); later reads double it.
const FIRST_READ: usize = 1024;

/// Upper bound of the head bytes a small frontmatter costs, for tests.
#[cfg(test)]
const CHUNK: usize = 4096;

/// Frontmatter larger than this is refused (it is certainly not metadata).
pub(crate) const MAX_FRONTMATTER_BYTES: usize = 256 * 1024;

/// Where the frontmatter sits in a file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// The file started with a UTF-8 BOM (stripped).
    pub had_bom: bool,
    /// Blank lines before the opening `---`.
    pub leading_blank_lines: usize,
    /// 1-based line of the opening `---`.
    pub opening_line: usize,
    /// Byte range of the YAML text (between the delimiter lines).
    pub yaml: std::ops::Range<usize>,
    /// 1-based line of the closing `---`.
    pub closing_line: usize,
    /// Byte offset where the body starts (after the closing line).
    pub body_start: usize,
    /// The YAML or the delimiters use CRLF line ends.
    pub crlf: bool,
}

impl Located {
    /// 1-based file line of the first YAML line.
    pub fn yaml_first_line(&self) -> usize {
        self.opening_line + 1
    }

    /// The YAML text, CRLF normalised to LF.
    pub fn yaml_text<'a>(&self, bytes: &'a [u8]) -> Result<Cow<'a, str>, SplitError> {
        let raw = &bytes[self.yaml.clone()];
        let text = std::str::from_utf8(raw).map_err(|e| SplitError::NotUtf8 {
            line: self.opening_line + 1 + count_lines(&raw[..e.valid_up_to()]),
        })?;
        Ok(if text.contains('\r') {
            Cow::Owned(text.replace("\r\n", "\n"))
        } else {
            Cow::Borrowed(text)
        })
    }
}

/// Why no frontmatter could be located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SplitError {
    /// The first non-blank line is not `---` (or the file is empty).
    Missing {
        /// The offending line.
        line: usize,
    },
    /// No closing `---` line.
    Unclosed {
        /// Line of the opening delimiter.
        opening_line: usize,
    },
    /// The frontmatter is longer than [`MAX_FRONTMATTER_BYTES`] without closing.
    TooLarge {
        /// Line of the opening delimiter.
        opening_line: usize,
    },
    /// The frontmatter is not UTF-8.
    NotUtf8 {
        /// First line with an invalid sequence.
        line: usize,
    },
}

/// Result of scanning a prefix of the file.
enum Scan {
    Found(Located),
    NeedMore,
    Failed(SplitError),
}

fn count_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn is_delimiter(line: &[u8]) -> bool {
    line.trim_ascii() == b"---"
}

/// Scans `bytes` (a prefix of the file when `eof` is false).
fn scan(bytes: &[u8], eof: bool) -> Scan {
    let had_bom = bytes.starts_with(BOM);
    let start = if had_bom { BOM.len() } else { 0 };
    let mut pos = start;
    let mut line_no = 1;
    let mut leading_blank_lines = 0;
    let mut opening: Option<(usize, usize)> = None; // (line, yaml start)
    let mut crlf = false;
    loop {
        let Some(nl) = bytes[pos..].iter().position(|&b| b == b'\n') else {
            // Last (unterminated) line.
            if !eof {
                return if pos - start > MAX_FRONTMATTER_BYTES {
                    Scan::Failed(too_large(opening, line_no))
                } else {
                    Scan::NeedMore
                };
            }
            let line = &bytes[pos..];
            return match opening {
                None if line.trim_ascii().is_empty() => {
                    Scan::Failed(SplitError::Missing { line: line_no })
                }
                None if is_delimiter(line) => Scan::Failed(SplitError::Unclosed {
                    opening_line: line_no,
                }),
                None => Scan::Failed(SplitError::Missing { line: line_no }),
                Some((opening_line, yaml_start)) if is_delimiter(line) => Scan::Found(Located {
                    had_bom,
                    leading_blank_lines,
                    opening_line,
                    yaml: yaml_start..pos,
                    closing_line: line_no,
                    body_start: bytes.len(),
                    crlf,
                }),
                Some((opening_line, _)) => Scan::Failed(SplitError::Unclosed { opening_line }),
            };
        };
        let end = pos + nl;
        let line = &bytes[pos..end];
        if line.last() == Some(&b'\r') {
            crlf = true;
        }
        match opening {
            None => {
                if is_delimiter(line) {
                    opening = Some((line_no, end + 1));
                } else if line.trim_ascii().is_empty() {
                    leading_blank_lines += 1;
                } else {
                    return Scan::Failed(SplitError::Missing { line: line_no });
                }
            }
            Some((opening_line, yaml_start)) => {
                if is_delimiter(line) {
                    return Scan::Found(Located {
                        had_bom,
                        leading_blank_lines,
                        opening_line,
                        yaml: yaml_start..pos,
                        closing_line: line_no,
                        body_start: end + 1,
                        crlf,
                    });
                }
                if end - yaml_start > MAX_FRONTMATTER_BYTES {
                    return Scan::Failed(SplitError::TooLarge { opening_line });
                }
            }
        }
        pos = end + 1;
        line_no += 1;
    }
}

fn too_large(opening: Option<(usize, usize)>, line_no: usize) -> SplitError {
    match opening {
        Some((opening_line, _)) => SplitError::TooLarge { opening_line },
        None => SplitError::Missing { line: line_no },
    }
}

/// Locates the frontmatter in a whole file's bytes.
pub(crate) fn locate(bytes: &[u8]) -> Result<Located, SplitError> {
    match scan(bytes, true) {
        Scan::Found(l) => Ok(l),
        Scan::Failed(e) => Err(e),
        // With eof = true the scan always decides.
        Scan::NeedMore => Err(SplitError::Missing { line: 1 }),
    }
}

/// Reads `file` chunk by chunk into `buf` until the frontmatter is closed
/// (or refused), so that discovery never reads a body. `len` is the file's
/// size when known: it saves the read that would only report the end.
pub(crate) fn read_head(
    file: &mut File,
    buf: &mut Vec<u8>,
    len: Option<u64>,
) -> io::Result<Result<Located, SplitError>> {
    let mut filled = 0;
    let mut want = FIRST_READ;
    let outcome = loop {
        // Read straight into the buffer, no intermediate copy.
        buf.resize(filled + want, 0);
        let n = file.read(&mut buf[filled..filled + want])?;
        filled += n;
        let eof = n == 0 || len.is_some_and(|l| filled as u64 >= l);
        match scan(&buf[..filled], eof) {
            Scan::Found(l) => break Ok(l),
            Scan::Failed(e) => break Err(e),
            Scan::NeedMore if eof => break locate(&buf[..filled]),
            Scan::NeedMore => want = (want * 2).min(MAX_FRONTMATTER_BYTES),
        }
    };
    buf.truncate(filled);
    Ok(outcome)
}

/// The markdown body of a whole SKILL.md: everything after the frontmatter,
/// CRLF normalised, leading blank lines and trailing whitespace trimmed.
/// A file without frontmatter is all body.
pub(crate) fn body_of(bytes: &[u8]) -> Result<String, SplitError> {
    let start = match locate(bytes) {
        Ok(l) => l.body_start,
        Err(_) if bytes.starts_with(BOM) => BOM.len(),
        Err(_) => 0,
    };
    let raw = &bytes[start.min(bytes.len())..];
    let text = std::str::from_utf8(raw).map_err(|e| SplitError::NotUtf8 {
        line: 1 + count_lines(&bytes[..start + e.valid_up_to()]),
    })?;
    let text = text.replace("\r\n", "\n");
    let mut rest = text.as_str();
    while let Some(nl) = rest.find('\n') {
        if !rest[..nl].trim().is_empty() {
            break;
        }
        rest = &rest[nl + 1..];
    }
    Ok(rest.trim_end().to_owned())
}

/// Why a SKILL.md's frontmatter cannot be read: what is wrong, at its
/// line (1-based, from the top of the file) and, for YAML, its column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}{}: {message}", column.map(|c| format!(", column {c}")).unwrap_or_default())]
pub struct FrontmatterError {
    /// The line at fault.
    pub line: usize,
    /// The column at fault, for a YAML syntax error.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// The frontmatter of a SKILL.md's text as JSON, read as a local skill's
/// is (found by [`locate`]'s rule, parsed by this crate's YAML reader,
/// plain scalars typed by YAML 1.2's core schema), or why it cannot be
/// read, located. For a SKILL.md that an MCP server hosts, whose
/// frontmatter must equal its manifest's.
pub fn frontmatter_json(text: &str) -> Result<serde_json::Value, FrontmatterError> {
    let split = |e: SplitError| {
        let (_, line, message) = crate::validate::split_message(&e);
        FrontmatterError {
            line,
            column: None,
            message,
        }
    };
    let bytes = text.as_bytes();
    let located = locate(bytes).map_err(split)?;
    let yaml = located.yaml_text(bytes).map_err(split)?;
    let doc = crate::yaml::parse(&yaml).map_err(|e| FrontmatterError {
        line: located.yaml_first_line() + e.line.saturating_sub(1),
        column: Some(e.column),
        message: e.message,
    })?;
    Ok(doc
        .root
        .map_or(serde_json::Value::Null, |root| root.to_json()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> (Located, String) {
        let l = locate(text.as_bytes()).unwrap();
        let y = l.yaml_text(text.as_bytes()).unwrap().into_owned();
        (l, y)
    }

    #[test]
    fn frontmatter_as_json_or_why_not_with_its_place() {
        let json =
            frontmatter_json("\u{feff}---\r\nname: x\r\nn: 1\r\nm:\r\n  k: '1'\r\n---\r\nBody\r\n");
        assert_eq!(
            json,
            Ok(serde_json::json!({"name": "x", "n": 1, "m": {"k": "1"}}))
        );
        let e = frontmatter_json("---\nname: x\ndescription: a: b\n---\n").unwrap_err();
        assert_eq!((e.line, e.column.is_some()), (3, true), "{e}");
        assert!(e.to_string().starts_with("line 3, column "), "{e}");
        let e = frontmatter_json("# no frontmatter\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, None), "{e}");
        assert!(
            e.message.contains("must start with YAML frontmatter"),
            "{e}"
        );
        let e = frontmatter_json("---\nname: x\n").unwrap_err();
        assert!(e.message.contains("not properly closed"), "{e}");
        assert_eq!(frontmatter_json("---\n---\n"), Ok(serde_json::Value::Null));
    }

    #[test]
    fn finds_frontmatter_and_body() {
        let text = "---\nname: x\ndescription: d\n---\n# Body\n";
        let (l, y) = yaml(text);
        assert_eq!(y, "name: x\ndescription: d\n");
        assert_eq!(l.opening_line, 1);
        assert_eq!(l.closing_line, 4);
        assert_eq!(&text[l.body_start..], "# Body\n");
        assert_eq!(body_of(text.as_bytes()).unwrap(), "# Body");
    }

    #[test]
    fn dashes_inside_a_value_do_not_close() {
        let text = "---\nname: x\ndescription: has --- dashes\n---\nbody --- too\n";
        let (_, y) = yaml(text);
        assert_eq!(y, "name: x\ndescription: has --- dashes\n");
        assert_eq!(body_of(text.as_bytes()).unwrap(), "body --- too");
    }

    #[test]
    fn bom_and_crlf_are_accepted_and_reported() {
        let text = "\u{feff}---\r\nname: x\r\ndescription: d\r\n---\r\nBody\r\nline 2\r\n";
        let (l, y) = yaml(text);
        assert!(l.had_bom);
        assert!(l.crlf);
        assert_eq!(y, "name: x\ndescription: d\n");
        assert_eq!(body_of(text.as_bytes()).unwrap(), "Body\nline 2");
    }

    #[test]
    fn leading_blank_lines_are_counted() {
        let (l, _) = yaml("\n  \n---\nname: x\n---\n");
        assert_eq!(l.leading_blank_lines, 2);
        assert_eq!(l.opening_line, 3);
        assert_eq!(l.yaml_first_line(), 4);
    }

    #[test]
    fn missing_and_unclosed() {
        assert_eq!(
            locate(b"# no frontmatter\n"),
            Err(SplitError::Missing { line: 1 })
        );
        assert_eq!(locate(b""), Err(SplitError::Missing { line: 1 }));
        assert_eq!(
            locate(b"---\nname: x\n"),
            Err(SplitError::Unclosed { opening_line: 1 })
        );
        assert_eq!(
            locate(b"----\nname: x\n---\n"),
            Err(SplitError::Missing { line: 1 })
        );
        // A closing line without a final newline still closes.
        assert!(locate(b"---\nname: x\n---").is_ok());
    }

    #[test]
    fn invalid_utf8_reports_its_line() {
        let text = b"---\nname: x\ndescription: \xff\n---\n";
        let l = locate(text).unwrap();
        assert_eq!(l.yaml_text(text), Err(SplitError::NotUtf8 { line: 3 }));
    }

    #[test]
    fn head_reading_stops_after_the_frontmatter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SKILL.md");
        let body = "x".repeat(1024 * 1024);
        std::fs::write(&path, format!("---\nname: a\ndescription: b\n---\n{body}")).unwrap();
        let mut f = File::open(&path).unwrap();
        let mut buf = Vec::new();
        let located = read_head(&mut f, &mut buf, None).unwrap();
        assert!(located.is_ok());
        assert!(buf.len() <= CHUNK, "read {} bytes", buf.len());
    }

    #[test]
    fn head_reading_handles_frontmatter_longer_than_a_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SKILL.md");
        let long = "y".repeat(CHUNK * 2);
        std::fs::write(
            &path,
            format!("---\nname: a\ndescription: {long}\n---\nbody\n"),
        )
        .unwrap();
        let mut f = File::open(&path).unwrap();
        let mut buf = Vec::new();
        let l = read_head(&mut f, &mut buf, None).unwrap().unwrap();
        assert_eq!(l.closing_line, 4);
        // With the length known, a small file is one read.
        let small = dir.path().join("small.md");
        std::fs::write(&small, "---\nname: a\n---\nbody").unwrap();
        let mut f = File::open(&small).unwrap();
        let len = f.metadata().unwrap().len();
        assert!(read_head(&mut f, &mut buf, Some(len)).unwrap().is_ok());
    }
}
