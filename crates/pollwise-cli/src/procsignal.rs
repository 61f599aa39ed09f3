//! Sending a signal to a process this one started (`pollwise exec` passes on the signals it
//! gets to its program).

#![allow(unsafe_code)]

/// Sends `sig` to the process `pid`.
pub fn send(pid: u32, sig: i32) -> std::io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: kill(2) takes two integers and touches no memory of this process; `pid` is a
    // positive process id (never 0 or -1, which would signal a group or every process).
    let r = unsafe { libc::kill(pid.max(1), sig) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_the_signal() {
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        send(c.id(), libc::SIGTERM).unwrap();
        let st = c.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&st),
            Some(libc::SIGTERM)
        );
    }
}
