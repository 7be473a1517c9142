//! The simulated container behind `pods/exec` and `pods/attach`: a handful of
//! built-in commands that read standard input and write standard output and
//! error through channels, and end with an exit code.
//!
//! The command set: `echo ARGS...`, `hostname` (the pod's name), `cat`
//! (standard input to standard output), `true`, `false`, `sh -c SCRIPT`
//! (`exit [N]` or one of these commands, split on whitespace) and `sh`/`bash`
//! alone (runs standard input line by line). Anything else writes
//! `NAME: command not found` to standard error and exits 127.
//!
//! Invariants: standard input ends when its sender is dropped; a command whose
//! output receiver is gone stops instead of blocking; nothing here panics on
//! any argument vector.

use bytes::Bytes;
use tokio::sync::mpsc;

/// Where a chunk of output goes; the value is the POSIX descriptor, which is
/// also the number of its channel in the remote-command protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fd {
    /// Standard output.
    Stdout = 1,
    /// Standard error.
    Stderr = 2,
}

/// A command's standard streams.
#[derive(Debug)]
pub struct Stdio {
    /// Standard input, chunk by chunk; `None` from `recv` is end of input.
    pub stdin: mpsc::Receiver<Bytes>,
    /// Standard output and error.
    pub out: mpsc::Sender<(Fd, Bytes)>,
}

impl Stdio {
    /// Writes `text` to `fd`; false when nobody reads the output any more.
    async fn write(&self, fd: Fd, text: impl Into<Bytes>) -> bool {
        self.out.send((fd, text.into())).await.is_ok()
    }
}

/// Runs `argv` in the container of pod `pod`; returns the exit code.
pub async fn exec(pod: &str, argv: &[String], mut io: Stdio) -> u8 {
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    if let ["sh" | "bash"] = argv.as_slice() {
        return shell(pod, &mut io).await;
    }
    run(pod, argv, &mut io).await
}

/// What `attach` shows: the container's output line, then standard input
/// echoed back until it ends (the container behaves like `cat`).
pub async fn attach(namespace: &str, pod: &str, mut io: Stdio) -> u8 {
    if io.write(Fd::Stdout, format!("simulated log of pod {namespace}/{pod}\n")).await {
        cat(&mut io).await;
    }
    0
}

/// One command (after `sh -c` unwrapping).
async fn run<'a>(pod: &str, mut argv: Vec<&'a str>, io: &mut Stdio) -> u8 {
    while let ["sh" | "bash", "-c", script, ..] = argv.as_slice() {
        let script: &'a str = script;
        argv = script.split_whitespace().collect();
        if let ["exit", rest @ ..] = argv.as_slice() {
            return exit_code(rest, io).await;
        }
    }
    match argv.as_slice() {
        [] | ["true", ..] => 0,
        ["false", ..] => 1,
        ["echo", args @ ..] => {
            io.write(Fd::Stdout, format!("{}\n", args.join(" "))).await;
            0
        }
        ["hostname"] => {
            io.write(Fd::Stdout, format!("{pod}\n")).await;
            0
        }
        ["cat"] => {
            cat(io).await;
            0
        }
        [name, ..] => {
            io.write(Fd::Stderr, format!("{name}: command not found\n")).await;
            127
        }
    }
}

/// `exit [N]` as `sh` reads it: N modulo 256, 2 for a non-number.
async fn exit_code(args: &[&str], io: &Stdio) -> u8 {
    match args.first() {
        None => 0,
        Some(n) => match n.parse::<i64>() {
            Ok(n) => u8::try_from(n.rem_euclid(256)).unwrap_or(u8::MAX),
            Err(_) => {
                io.write(Fd::Stderr, format!("sh: 1: exit: Illegal number: {n}\n")).await;
                2
            }
        },
    }
}

/// Copies standard input to standard output until either ends.
async fn cat(io: &mut Stdio) {
    while let Some(chunk) = io.stdin.recv().await {
        if !io.write(Fd::Stdout, chunk).await {
            return;
        }
    }
}

/// An interactive shell without a terminal: each line of standard input is
/// one command; `exit [N]` or the end of input ends it with the last code.
async fn shell(pod: &str, io: &mut Stdio) -> u8 {
    let mut pending: Vec<u8> = Vec::new();
    let mut code = 0;
    loop {
        while let Some(end) = pending.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]).into_owned();
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["exit", rest @ ..] = words.as_slice() {
                return exit_code(rest, io).await;
            }
            code = run(pod, words, io).await;
        }
        match io.stdin.recv().await {
            Some(chunk) => pending.extend_from_slice(&chunk),
            None => return code,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `argv` with `input` on standard input; returns (code, stdout, stderr).
    async fn output(argv: &[&str], input: &[&str]) -> (u8, String, String) {
        let (in_tx, stdin) = mpsc::channel(16);
        let (out, mut out_rx) = mpsc::channel(16);
        for chunk in input {
            in_tx.send(Bytes::copy_from_slice(chunk.as_bytes())).await.expect("room for the input");
        }
        drop(in_tx);
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_string()).collect();
        let code = exec("pod-1", &argv, Stdio { stdin, out }).await;
        let (mut stdout, mut stderr) = (String::new(), String::new());
        while let Ok((fd, b)) = out_rx.try_recv() {
            let text = String::from_utf8_lossy(&b);
            if fd == Fd::Stdout { stdout.push_str(&text) } else { stderr.push_str(&text) }
        }
        (code, stdout, stderr)
    }

    fn owned(code: u8, out: &str, err: &str) -> (u8, String, String) {
        (code, out.to_string(), err.to_string())
    }

    #[tokio::test]
    async fn builtins_print_and_exit_as_a_shell_would() {
        assert_eq!(output(&["echo", "hello", "world"], &[]).await, owned(0, "hello world\n", ""));
        assert_eq!(output(&["hostname"], &[]).await, owned(0, "pod-1\n", ""));
        assert_eq!(output(&["cat"], &["ab", "c"]).await, owned(0, "abc", ""));
        assert_eq!(output(&["true"], &[]).await, owned(0, "", ""));
        assert_eq!(output(&["false"], &[]).await, owned(1, "", ""));
        assert_eq!(output(&["sh", "-c", "exit 3"], &[]).await, owned(3, "", ""));
        assert_eq!(output(&["sh", "-c", "exit 259"], &[]).await, owned(3, "", ""));
        assert_eq!(output(&["sh", "-c", "exit x"], &[]).await, owned(2, "", "sh: 1: exit: Illegal number: x\n"));
        assert_eq!(output(&["sh", "-c", "echo  a   b"], &[]).await, owned(0, "a b\n", ""));
        assert_eq!(output(&["ls", "-l"], &[]).await, owned(127, "", "ls: command not found\n"));
    }

    #[tokio::test]
    async fn a_shell_runs_its_input_line_by_line() {
        assert_eq!(output(&["sh"], &["echo one\nhost", "name\nfalse\n"]).await, owned(1, "one\npod-1\n", ""));
        assert_eq!(output(&["bash"], &["echo a\r", "exit 7\necho never\n"]).await, owned(7, "a\n", ""));
    }
}
