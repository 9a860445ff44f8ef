//! One global TRACE subscriber for the whole test binary, writing into a
//! buffer tests can search (every target, rmcp and reqwest included).

use std::sync::{Arc, Mutex, OnceLock};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static BUFFER: OnceLock<Buffer> = OnceLock::new();

/// Installs the subscriber (once) and returns the log text so far.
pub fn captured() -> String {
    let buffer = BUFFER.get_or_init(|| {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        buffer
    });
    String::from_utf8_lossy(&buffer.0.lock().expect("log buffer")).into_owned()
}
