//! `ttop completions`: its argument and the completions generated from the clap
//! definitions.

use clap::Args;

use super::Cli;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Shell completions for `shell`, generated from these definitions (they never drift).
pub fn completions(shell: Shell) -> Vec<u8> {
    use clap::CommandFactory;
    use clap_complete::{generate, shells};
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    match shell {
        Shell::Bash => generate(shells::Bash, &mut cmd, "ttop", &mut out),
        Shell::Zsh => generate(shells::Zsh, &mut cmd, "ttop", &mut out),
        Shell::Fish => generate(shells::Fish, &mut cmd, "ttop", &mut out),
    }
    out
}
