//! Running `docker`, `docker compose` and `cargo` with a deadline. Output goes to anonymous files rather than
//! pipes: a process that leaves a child holding a pipe open (the `docker` CLI and its compose plugin) can
//! then never make the test wait past the deadline.

use std::fs::File;
use std::io::Seek;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to completion within `timeout` (killed at the deadline) and returns its stdout. The error
/// names the command and carries its stderr and stdout.
pub fn run(cmd: &mut Command, timeout: Duration) -> Result<String, String> {
    let (out, err) = (capture()?, capture()?);
    cmd.stdout(clone(&out)?).stderr(clone(&err)?);
    finish(cmd, timeout, out, Some(err))
}

/// [`run`], with the command's stderr shown as it goes (a long `cargo build`'s progress).
pub fn run_showing_progress(cmd: &mut Command, timeout: Duration) -> Result<String, String> {
    let out = capture()?;
    cmd.stdout(clone(&out)?).stderr(Stdio::inherit());
    finish(cmd, timeout, out, None)
}

fn finish(cmd: &mut Command, timeout: Duration, out: File, err: Option<File>) -> Result<String, String> {
    let what = describe(cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().map_err(|e| format!("waiting for {what}: {e}"))? {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let stdout = read_back(out);
    let stderr = err.map(read_back).unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(stdout),
        Some(s) => Err(format!("{what} failed ({s})\nstderr:\n{stderr}\nstdout:\n{stdout}")),
        None => Err(format!(
            "{what} did not finish within {timeout:?} (killed)\nstderr:\n{stderr}\nstdout:\n{stdout}"
        )),
    }
}

/// `docker compose -p x up -d`: the program and its arguments, for messages.
pub fn describe(cmd: &Command) -> String {
    let mut words = vec![cmd.get_program().to_string_lossy().into_owned()];
    words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    format!("`{}`", words.join(" "))
}

fn capture() -> Result<File, String> {
    tempfile::tempfile().map_err(|e| format!("creating a temporary file for a command's output: {e}"))
}

fn clone(file: &File) -> Result<File, String> {
    file.try_clone().map_err(|e| format!("sharing a temporary file: {e}"))
}

/// The file's whole text (an anonymous file has no path to read it by).
fn read_back(mut file: File) -> String {
    let _ = file.rewind();
    std::io::read_to_string(file).unwrap_or_default()
}
