//! Fixed media used by `mixed_content` and the `testkit://blob` resource:
//! a 1×1 PNG and a few samples of silent WAV audio, small enough to keep
//! results readable in test failures.

use base64::{Engine, prelude::BASE64_STANDARD};

/// A valid 1×1 transparent PNG.
pub(crate) const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The MIME type of [`PNG_1X1`].
pub(crate) const PNG_MIME: &str = "image/png";
/// The MIME type of [`wav`].
pub(crate) const WAV_MIME: &str = "audio/wav";

/// Eight samples of silence as an 8 kHz, 8-bit mono RIFF/WAVE file.
pub(crate) fn wav() -> Vec<u8> {
    const SAMPLES: u32 = 8;
    const RATE: u32 = 8_000;
    let mut out = Vec::with_capacity(44 + SAMPLES as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + SAMPLES).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&RATE.to_le_bytes()); // byte rate
    out.extend_from_slice(&1u16.to_le_bytes()); // block align
    out.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"data");
    out.extend_from_slice(&SAMPLES.to_le_bytes());
    out.extend(std::iter::repeat_n(0x80u8, SAMPLES as usize)); // 8-bit silence
    out
}

/// Standard base64, as MCP carries binary content.
pub(crate) fn base64(bytes: &[u8]) -> String {
    BASE64_STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_have_their_magic_numbers() {
        assert_eq!(&PNG_1X1[1..4], b"PNG");
        let wav = wav();
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(&wav[8..12], b"WAVE");
        assert_eq!(wav.len(), 52);
    }
}
