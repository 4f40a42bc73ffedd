//! `fedcluster certs`: a private CA and certificates for a networked run (the
//! coordinator's, for the names it is reached by, and a client certificate
//! for mutual TLS), as PEM files. For trials and small deployments; an
//! organisation with its own PKI uses its own certificates instead.

use std::path::Path;

use anyhow::{Context, Result, bail};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use fedcluster_run::whole_file::{write_secret, write_whole};

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
/// written readable by the owner only. Existing files are refused unless
/// `overwrite` (a replaced CA invalidates every certificate it signed);
/// everything is generated before the first file is written, and each file
/// is written under a temporary name and renamed.
pub fn generate(dir: &Path, server_names: &[String], overwrite: bool) -> Result<()> {
    if !overwrite && let Some(name) = FILES.iter().find(|f| dir.join(f).exists()) {
        bail!(
            "{} already exists: replacing the CA invalidates every certificate it signed; \
             pass --overwrite to replace it or choose another --out",
            dir.join(name).display()
        );
    }
    if server_names.iter().any(|n| n.trim().is_empty()) {
        bail!("--server-name: a name must not be empty (give a DNS name or an IP address)");
    }
    let files = pem_files(server_names)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in &files {
        let path = dir.join(name);
        if name.ends_with(".key") {
            write_secret(&path, text.as_bytes())?;
        } else {
            write_whole(&path, text.as_bytes())?;
        }
    }
    Ok(())
}

/// The PEM text of every file of [`FILES`], in that order.
fn pem_files(server_names: &[String]) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "fedcluster private CA");
    let ca_cert = ca.self_signed(&ca_key)?;
    files.push(("ca.pem".to_string(), ca_cert.pem()));
    files.push(("ca.key".to_string(), ca_key.serialize_pem()));
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
        files.push((format!("{name}.pem"), cert.pem()));
        files.push((format!("{name}.key"), key.serialize_pem()));
    }
    Ok(files)
}
