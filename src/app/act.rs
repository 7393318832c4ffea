//! Acting on a process, as in htop: send a signal (F9), renice (F7/F8, `]`/`[`), set
//! the CPU affinity (`a`). Each is confirmed in a one-line prompt in the footer before
//! anything is done. This is the UI's state only: the live loop performs the request
//! (`act_exec::perform`) and puts the outcome back in `App::act_result`; a replay has
//! no processes to act on and says so.

use crossterm::event::{KeyCode, KeyEvent};

/// The signals offered, in htop's order of use: the polite ones first.
pub const SIGNALS: &[(&str, i32)] = &[
    ("TERM", libc::SIGTERM),
    ("KILL", libc::SIGKILL),
    ("INT", libc::SIGINT),
    ("HUP", libc::SIGHUP),
    ("QUIT", libc::SIGQUIT),
    ("STOP", libc::SIGSTOP),
    ("CONT", libc::SIGCONT),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
];

/// What to do to a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcAct {
    /// kill(2) with this signal.
    Signal(i32),
    /// Change the nice value of every thread by this much (htop's F7/F8 step by 1).
    NiceBy(i32),
    /// Pin every thread to these CPUs.
    Affinity(Vec<usize>),
}

/// A confirmed act, for the live loop to perform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActRequest {
    pub pid: u32,
    /// The process's name, for the messages ("nginx(1234)").
    pub comm: String,
    pub act: ProcAct,
}

impl ActRequest {
    /// "SIGTERM to nginx(1234)", what the confirmation and the outcome say.
    pub fn describe(&self) -> String {
        let who = format!("{}({})", self.comm, self.pid);
        match &self.act {
            ProcAct::Signal(s) => format!("SIG{} to {who}", signal_name(*s)),
            ProcAct::NiceBy(d) => format!("nice {d:+} for every thread of {who}"),
            ProcAct::Affinity(c) => format!("CPUs {} for every thread of {who}", cpu_list(c)),
        }
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    SIGNALS
        .iter()
        .find(|(_, s)| *s == sig)
        .map_or("?", |(n, _)| n)
}

/// The open prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Choosing a signal (←/→), Enter to go on.
    Signals(usize),
    /// Typing a CPU list, Enter to go on.
    Cpus(String),
    /// y sends it, anything else cancels.
    Confirm(ActRequest),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActMenu {
    pub pid: u32,
    pub comm: String,
    pub stage: Stage,
    /// Why the typed CPU list was not taken (shown beside it).
    pub error: Option<String>,
}

/// What a key in the menu leads to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Stay,
    Cancel,
    Do(ActRequest),
}

impl ActMenu {
    pub fn signals(pid: u32, comm: &str) -> Self {
        Self::new(pid, comm, Stage::Signals(0))
    }

    pub fn nice_by(pid: u32, comm: &str, by: i32) -> Self {
        let r = ActRequest {
            pid,
            comm: comm.to_string(),
            act: ProcAct::NiceBy(by),
        };
        Self::new(pid, comm, Stage::Confirm(r))
    }

    pub fn affinity(pid: u32, comm: &str) -> Self {
        Self::new(pid, comm, Stage::Cpus(String::new()))
    }

    fn new(pid: u32, comm: &str, stage: Stage) -> Self {
        ActMenu {
            pid,
            comm: comm.to_string(),
            stage,
            error: None,
        }
    }

    pub fn key(&mut self, k: &KeyEvent) -> Outcome {
        if k.code == KeyCode::Esc {
            return Outcome::Cancel;
        }
        let (pid, comm) = (self.pid, self.comm.clone());
        let request = |act| ActRequest { pid, comm, act };
        match &mut self.stage {
            Stage::Signals(i) => match k.code {
                KeyCode::Left | KeyCode::Up | KeyCode::Char('h') | KeyCode::Char('k') => {
                    *i = (*i + SIGNALS.len() - 1) % SIGNALS.len()
                }
                KeyCode::Right | KeyCode::Down | KeyCode::Char('l') | KeyCode::Char('j') => {
                    *i = (*i + 1) % SIGNALS.len()
                }
                KeyCode::Enter => {
                    let r = request(ProcAct::Signal(SIGNALS[*i].1));
                    self.stage = Stage::Confirm(r);
                }
                _ => {}
            },
            Stage::Cpus(text) => match k.code {
                KeyCode::Char(c) if c.is_ascii_digit() || c == ',' || c == '-' => text.push(c),
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Enter => match parse_cpus(text) {
                    Ok(cpus) => {
                        self.error = None;
                        let r = request(ProcAct::Affinity(cpus));
                        self.stage = Stage::Confirm(r);
                    }
                    Err(e) => self.error = Some(e),
                },
                _ => {}
            },
            Stage::Confirm(r) => {
                return match k.code {
                    KeyCode::Char('y') | KeyCode::Char('Y') => Outcome::Do(r.clone()),
                    _ => Outcome::Cancel,
                };
            }
        }
        Outcome::Stay
    }
}

/// "0,2-3" as CPU numbers (the kernel's list format, as in taskset -c and cpuset).
pub fn parse_cpus(text: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("{part:?} is not a CPU or a range like 2-3");
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let n: usize = part.parse().map_err(|_| bad())?;
                (n, n)
            }
        };
        if a > b || b >= 1024 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err("no CPU given".into());
    }
    Ok(out)
}

/// CPU numbers as the kernel's list format ("0,2-3").
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn cpu_lists_round_trip_and_refuse_nonsense() {
        assert_eq!(parse_cpus("0,2-3").unwrap(), vec![0, 2, 3]);
        assert_eq!(parse_cpus("3,1,1").unwrap(), vec![1, 3]);
        assert_eq!(cpu_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert!(parse_cpus("").is_err());
        assert!(parse_cpus("3-1").unwrap_err().contains("3-1"));
        assert!(parse_cpus("x").is_err());
    }

    #[test]
    fn a_signal_is_chosen_then_confirmed_and_anything_but_y_cancels() {
        let mut m = ActMenu::signals(42, "nginx");
        assert_eq!(m.key(&key(KeyCode::Right)), Outcome::Stay);
        assert_eq!(m.key(&key(KeyCode::Enter)), Outcome::Stay);
        let Stage::Confirm(r) = &m.stage else {
            panic!("{m:?}")
        };
        assert_eq!(r.describe(), "SIGKILL to nginx(42)");
        assert_eq!(
            m.clone().key(&key(KeyCode::Char('y'))),
            Outcome::Do(r.clone())
        );
        assert_eq!(m.key(&key(KeyCode::Char('n'))), Outcome::Cancel);
        let mut m = ActMenu::signals(42, "nginx");
        assert_eq!(m.key(&key(KeyCode::Left)), Outcome::Stay);
        assert_eq!(m.stage, Stage::Signals(SIGNALS.len() - 1));
        assert_eq!(m.key(&key(KeyCode::Esc)), Outcome::Cancel);
    }

    #[test]
    fn a_bad_cpu_list_stays_open_with_the_reason() {
        let mut m = ActMenu::affinity(7, "db");
        for c in "9-2".chars() {
            m.key(&key(KeyCode::Char(c)));
        }
        assert_eq!(m.key(&key(KeyCode::Enter)), Outcome::Stay);
        assert!(m.error.as_deref().unwrap().contains("9-2"));
        for _ in 0..3 {
            m.key(&key(KeyCode::Backspace));
        }
        m.key(&key(KeyCode::Char('1')));
        m.key(&key(KeyCode::Enter));
        let Stage::Confirm(r) = &m.stage else {
            panic!("{m:?}")
        };
        assert_eq!(r.act, ProcAct::Affinity(vec![1]));
    }
}
