//! `fedcluster certs`: a private CA and certificates for a networked run (the
//! coordinator's, for the names it is reached by, and a client certificate
//! for mutual TLS), as PEM files. For trials and small deployments; an
//! organisation with its own PKI uses its own certificates instead.

use std::path::Path;

use anyhow::{Context, Result};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// Files written by [`generate`].
pub const FILES: [&str; 6] = [
    "ca.pem",
    "ca.key",
    "server.pem",
    "server.key",
    "client.pem",
    "client.key",
];

/// Writes a CA (`ca.pem`, `ca.key`), a coordinator certificate valid for
/// `server_names` (DNS names or IP addresses; `server.pem`, `server.key`)
/// and a client certificate (`client.pem`, `client.key`) into `dir`. Keys are
/// written readable by the owner only.
pub fn generate(dir: &Path, server_names: &[String]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "fedcluster private CA");
    let ca_cert = ca.self_signed(&ca_key)?;
    write(dir, "ca.pem", &ca_cert.pem(), false)?;
    write(dir, "ca.key", &ca_key.serialize_pem(), true)?;
    let issuer = Issuer::new(ca, ca_key);
    for (name, sans) in [
        ("server", server_names.to_vec()),
        ("client", vec!["client.fedcluster".to_string()]),
    ] {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(sans)
            .with_context(|| format!("invalid name among {server_names:?}"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("fedcluster {name}"));
        let cert = params.signed_by(&key, &issuer)?;
        write(dir, &format!("{name}.pem"), &cert.pem(), false)?;
        write(dir, &format!("{name}.key"), &key.serialize_pem(), true)?;
    }
    Ok(())
}

fn write(dir: &Path, name: &str, text: &str, secret: bool) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot restrict {}", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = secret;
    Ok(())
}
