//! YAML: serde of the result model, same keys as JSON.
pub fn render<T: serde::Serialize>(value: &T) -> anyhow::Result<String> {
    Ok(serde_yaml::to_string(value)?)
}
