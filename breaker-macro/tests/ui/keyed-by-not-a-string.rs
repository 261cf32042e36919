use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "tenants", keyed_by = tenant_id)]
fn load(tenant_id: u64) -> Result<u64, anyhow::Error> {
    Ok(tenant_id)
}

fn main() {}
