//! GitHub Actions workflow annotations (::error / ::warning) for findings.
