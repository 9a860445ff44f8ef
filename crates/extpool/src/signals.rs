//! SIGINT, SIGTERM and SIGHUP: while servers run, a signal ends the
//! command as a normal exit would — the host shuts down, each server's
//! process group is terminated, then killed — instead of leaving servers
//! that ignore the end of their input running on. A second signal exits
//! at once. With no host open, a signal ends extpool at once, as usual.
//!
//! Handlers are installed the first time a command asks ([`subscribe`]);
//! each [`Signals`] alive says a command will act on the signal.

use std::sync::OnceLock;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// A termination signal extpool acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
}

impl Signal {
    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            Self::Interrupt => 2,
            Self::Terminate => 15,
            Self::Hangup => 1,
        }
    }

    /// The exit status of a process ended by this signal (128 + number).
    pub fn exit_code(self) -> u8 {
        128 + self.number() as u8
    }

    /// `SIGINT`, `SIGTERM`, `SIGHUP`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
        }
    }
}

/// A command ended by a signal (exit status 128 + its number, nothing printed).
#[derive(Debug)]
pub struct Interrupted(pub Signal);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", self.0.name())
    }
}

impl std::error::Error for Interrupted {}

/// Tells a command that a signal arrived; while one is alive, the first
/// signal is left to it.
#[derive(Debug, Clone)]
pub struct Signals {
    rx: watch::Receiver<Option<Signal>>,
}

impl Signals {
    /// Waits for a signal (returns at once if one came already).
    pub async fn received(&mut self) -> Signal {
        match self.rx.wait_for(Option::is_some).await {
            Ok(signal) => signal.unwrap_or(Signal::Terminate),
            // The listener never ends; if it did, no signal will come.
            Err(_) => std::future::pending().await,
        }
    }

    /// The signal that arrived, if one did (what a command that stopped
    /// on it exits with).
    pub fn arrived(&self) -> Option<Signal> {
        *self.rx.borrow()
    }
}

static SENDER: OnceLock<watch::Sender<Option<Signal>>> = OnceLock::new();

/// Installs the handlers (once per process) and subscribes to them.
pub fn subscribe() -> std::io::Result<Signals> {
    if let Some(tx) = SENDER.get() {
        return Ok(Signals { rx: tx.subscribe() });
    }
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let tx = SENDER.get_or_init(|| watch::channel(None).0);
    let rx = tx.subscribe();
    let tx = tx.clone();
    tokio::spawn(async move {
        loop {
            let signal = tokio::select! {
                _ = interrupt.recv() => Signal::Interrupt,
                _ = terminate.recv() => Signal::Terminate,
                _ = hangup.recv() => Signal::Hangup,
            };
            let first = tx.borrow().is_none();
            if !first || tx.receiver_count() == 0 {
                // A second signal, or nobody to shut down: end now.
                std::process::exit(i32::from(signal.exit_code()));
            }
            tracing::info!(signal = signal.name(), "shutting down");
            tx.send_replace(Some(signal));
        }
    });
    Ok(Signals { rx })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_number() {
        assert_eq!(Signal::Interrupt.exit_code(), 130);
        assert_eq!(Signal::Terminate.exit_code(), 143);
        assert_eq!(Signal::Hangup.exit_code(), 129);
    }
}
