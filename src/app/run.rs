use crate::cli::Cli;
use crate::collect::Config;

pub fn live(_cli: &Cli, _cfg: &Config) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
