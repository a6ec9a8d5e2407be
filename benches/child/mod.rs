//! Child processes of a bench: the bench binary started again in another role, talking one
//! line at a time over its standard input and output.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A child process answering one line per line it is sent.
pub(crate) struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Process {
    pub(crate) fn spawn(mut command: Command) -> Process {
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("a child process");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut process = Process { child, stdin, stdout };
        assert_eq!(process.reply(), "ready");
        process
    }

    /// Sends `line` without waiting for the answer, so that every process starts at once.
    pub(crate) fn ask(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush()).expect("a live child");
    }

    /// Sends `line` and waits for the answer.
    #[allow(dead_code)]
    pub(crate) fn call(&mut self, line: &str) -> String {
        self.ask(line);
        self.reply()
    }

    pub(crate) fn reply(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("a reply");
        line.trim().to_owned()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
