//! Every child process extpool-mcp starts is spawned here, so that it dies
//! with the process that started it — even when that process is killed
//! with SIGKILL and cannot shut its servers down (a stdio server that
//! ignores the end of its stdin would otherwise run on, orphaned).
//!
//! - **Linux.** Between fork and exec a confined server's child first
//!   confines itself (`extpool_sandbox::ChildSteps::enter`: rlimits,
//!   namespaces, Landlock), then asks the kernel for SIGKILL when its
//!   parent dies (`PR_SET_PDEATHSIG`) and compares its parent with the pid
//!   captured before the spawn: when the parent died in between, the child
//!   exits at once. Code run between fork and exec is given to `pre_exec`,
//!   which is unsafe: [`before_exec`] is the one function of the workspace
//!   allowed unsafe code, and what it runs makes only async-signal-safe
//!   system calls.
//! - **One long-lived thread.** The death signal fires when the *thread*
//!   that forked the child ends, not the process: tokio's blocking-pool
//!   threads end when idle, a stdio connection's driver thread ends with
//!   its connection, a library user's thread whenever it likes. So every
//!   spawn runs on one spawner thread that lives as long as the process,
//!   entering the caller's tokio runtime so that the child and its pipes
//!   belong to that runtime as if the caller had spawned it.
//! - **Elsewhere.** No death signal: a child outlives a SIGKILL of its
//!   parent until it ends by itself (a stdio server normally does when its
//!   stdin closes). Everywhere, the process group the caller asks for
//!   (process-wrap's wrappers) is set as before, so a normal shutdown still
//!   terminates the whole group.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

use extpool_sandbox::ChildSteps;
use parking_lot::Mutex;
use process_wrap::tokio::{ChildWrapper, CommandWrap};
use tokio::runtime::Handle;

/// The spawner thread's name (at most the 15 bytes Linux keeps).
const SPAWNER_THREAD: &str = "extpool-spawner";

/// Work for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

/// The way to the spawner thread, made on first use; never dropped, so
/// the thread serves until the process ends.
static SPAWNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

/// Spawns `command` (a tokio command with its wrappers) tied to this
/// process's life (on Linux; see the module docs), confined by `confine`
/// when given, within the caller's tokio runtime. Blocks the caller for
/// the fork and exec, as tokio's own `spawn` does.
pub(crate) fn spawn(
    mut command: CommandWrap,
    confine: Option<ChildSteps>,
) -> io::Result<Box<dyn ChildWrapper>> {
    let runtime = Handle::try_current().map_err(|_| {
        io::Error::other("a child process can only be started within a tokio runtime")
    })?;
    #[cfg(target_os = "linux")]
    command.wrap(BeforeExec { confine });
    #[cfg(not(target_os = "linux"))]
    if let Some(steps) = confine {
        // Never made here: `extpool_sandbox::prepare` refuses elsewhere.
        drop(steps);
        return Err(io::Error::other("confinement is supported on Linux only"));
    }
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    on_spawner(move || {
        let _runtime = runtime.enter();
        tracing::dispatcher::with_default(&dispatch, || command.spawn())
    })
}

/// Runs `work` on the spawner thread and returns its result. The queue
/// holds at most one job per waiting caller.
fn on_spawner<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let (done, result) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = done.send(work());
    });
    {
        let mut slot = SPAWNER.lock();
        let sender = match slot.as_ref() {
            Some(sender) => sender,
            None => slot.insert(start()?),
        };
        sender
            .send(job)
            .map_err(|_| io::Error::other("the process spawner thread has ended"))?;
    }
    result
        .recv()
        .map_err(|_| io::Error::other("starting the child process panicked"))?
}

/// Starts the spawner thread; it serves until the process ends.
fn start() -> io::Result<mpsc::Sender<Job>> {
    let (sender, jobs) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name(SPAWNER_THREAD.into())
        .spawn(move || {
            for job in jobs {
                // A spawn that panics fails that spawn only (its caller is
                // told); the thread serves on.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
            }
        })?;
    Ok(sender)
}

/// The wrapper that confines a child (when asked) and has it killed when
/// this process dies.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct BeforeExec {
    confine: Option<ChildSteps>,
}

#[cfg(target_os = "linux")]
impl process_wrap::tokio::CommandWrapper for BeforeExec {
    fn pre_spawn(
        &mut self,
        command: &mut tokio::process::Command,
        _core: &CommandWrap,
    ) -> io::Result<()> {
        before_exec(command, rustix::process::getpid(), self.confine.take());
        Ok(())
    }
}

/// Has the child `command` starts confine itself by `confine` (when
/// given), then receive SIGKILL when `parent` (this process, its pid taken
/// before the spawn) dies, and exit at once when `parent` died before the
/// request was made.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn before_exec(
    command: &mut tokio::process::Command,
    parent: rustix::process::Pid,
    mut confine: Option<ChildSteps>,
) {
    use rustix::process::{Signal, getppid, set_parent_process_death_signal};
    let arm = move || -> io::Result<()> {
        if let Some(steps) = confine.as_mut() {
            steps.enter()?;
        }
        set_parent_process_death_signal(Some(Signal::KILL))?;
        if getppid() != Some(parent) {
            // Reparented: the parent is gone already.
            return Err(rustix::io::Errno::SRCH.into());
        }
        Ok(())
    };
    // SAFETY: `arm` runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed. `ChildSteps::enter` makes
    // system calls only (setrlimit, unshare, open/write of its own
    // /proc/self maps, socket/send/recv/bind/listen/sendmsg, mount,
    // prctl(PR_SET_NO_NEW_PRIVS) and landlock_restrict_self) on buffers
    // built before the fork, allocates nothing and takes no lock; it runs
    // once (the closure is called once per spawn, and the steps hold their
    // ruleset in an `Option` they take). Then two system calls,
    // prctl(PR_SET_PDEATHSIG) through rustix's
    // `set_parent_process_death_signal` and `getppid`. Errors are built
    // from an errno (no allocation); an error ends the child before exec.
    // The death signal is asked for after the namespaces are made, so no
    // change of credentials can clear it before exec.
    unsafe {
        command.pre_exec(arm);
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use std::process::Stdio;

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// This thread's kernel id, as the kernel names it in
    /// `/proc/thread-self` (`<pid>/task/<tid>`).
    fn kernel_tid() -> u32 {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        link.file_name().unwrap().to_str().unwrap().parse().unwrap()
    }

    /// The trap of the death signal: it fires when the thread that forked
    /// the child ends. A child asked for by a thread that then ends keeps
    /// running, and answers afterwards.
    #[tokio::test]
    async fn a_child_outlives_the_short_lived_thread_that_started_it() {
        let runtime = Handle::current();
        let asker = std::thread::spawn(move || {
            let _runtime = runtime.enter();
            let mut command = tokio::process::Command::new("cat");
            command.stdin(Stdio::piped()).stdout(Stdio::piped());
            let mut wrap = CommandWrap::from(command);
            wrap.wrap(process_wrap::tokio::KillOnDrop);
            (kernel_tid(), spawn(wrap, None).unwrap())
        });
        let (tid, mut child) = asker.join().unwrap();
        // On the kernel's word: once the thread has ended, a death signal
        // tied to it has been sent.
        extpool_testkit::procs::thread_ended(tid).await;
        let mut stdin = child.stdin().take().unwrap();
        let stdout = child.stdout().take().unwrap();
        let killed = "the child was killed with the thread that started it";
        stdin.write_all(b"still here\n").await.expect(killed);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .expect(killed);
        assert_eq!(line, "still here\n", "{killed}");
        Box::into_pin(child.kill()).await.unwrap();
    }
}
