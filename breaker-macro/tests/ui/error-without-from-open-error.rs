use breaker_runtime::circuit_breaker;

#[derive(Debug)]
pub struct ConfigError;

#[circuit_breaker(name = "files")]
fn read_config() -> Result<String, ConfigError> {
    std::fs::read_to_string("config.toml").map_err(|_| ConfigError)
}

fn main() {}
