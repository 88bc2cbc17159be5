//! `kiwi keys new|list|export|trust|untrust`: the user's Ed25519 key pair and the keys they
//! trust (`server/kernel/src/trust/`). The private key is never printed.

use anyhow::{bail, Context, Result};
use kiwi_kernel::context::Host;
use kiwi_kernel::trust::{self, pem, Keys, TrustError, TrustStore};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum KeysCommand {
    /// Make your key pair (user space `keys/`, the private key mode 0600) and trust it.
    New {
        #[arg(long)]
        json: bool,
    },
    /// Your key and the keys you trust (user space `trusted_keys/`, rye-os's too).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Print your public key (PEM; --base64 for the one-line form), to give to others.
    Export {
        #[arg(long)]
        base64: bool,
    },
    /// Trust a publisher's public key: a file, `-` for stdin, or the key itself (PEM, base64, hex).
    Trust {
        // A PEM starts with `-----`: taken as the value, never echoed by an argument error.
        #[arg(allow_hyphen_values = true)]
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Stop trusting a key, by its fingerprint (kiwi's, or rye-os's 16-character one).
    Untrust {
        #[arg(allow_hyphen_values = true)]
        fingerprint: String,
    },
}

fn user_space() -> PathBuf {
    Host::from_process().user_space()
}

pub fn run(cmd: KeysCommand) -> Result<ExitCode> {
    let user = user_space();
    match cmd {
        KeysCommand::New { json } => {
            let keys = Keys::generate(&user)?;
            let public = Keys::dir(&user).join(trust::PUBLIC_KEY_FILE);
            if json {
                println!(
                    "{}",
                    json!({
                        "fingerprint": keys.fingerprint(),
                        "public_key": trust::public_key_text(&keys.public_key()),
                        "public_key_file": public,
                        "private_key_file": keys.private_key_path(),
                    })
                );
            } else {
                println!("created your key pair: fingerprint {}", keys.fingerprint());
                println!(
                    "  private key: {} (mode 0600; never share it)",
                    keys.private_key_path().display()
                );
                println!("  public key:  {}", public.display());
                println!("give others your public key with `kiwi keys export`");
            }
        }
        KeysCommand::List { json } => {
            let own = match Keys::load(&user) {
                Ok(k) => Some(k),
                Err(TrustError::NoKey { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            let store = TrustStore::load(&user)?;
            let own_fp = own.as_ref().map(Keys::fingerprint);
            if json {
                let keys: Vec<_> = store
                    .keys()
                    .iter()
                    .map(|k| {
                        json!({
                            "fingerprint": k.fingerprint,
                            "rye_fingerprint": k.rye_fingerprint,
                            "ryeos_fingerprint": k.ryeos_fingerprint,
                            "file": k.path,
                            "public_key": trust::public_key_text(&k.key),
                            "own": own_fp.as_deref() == Some(k.fingerprint.as_str()),
                        })
                    })
                    .collect();
                let skipped: Vec<_> = store
                    .skipped()
                    .iter()
                    .map(|(p, why)| json!({"file": p, "reason": why}))
                    .collect();
                println!(
                    "{}",
                    json!({"own": own_fp, "trusted": keys, "skipped": skipped})
                );
            } else {
                match &own_fp {
                    Some(fp) => println!("your key: {fp}"),
                    None => println!("your key: none (`kiwi keys new` makes one)"),
                }
                if store.keys().is_empty() {
                    println!("trusted keys: none ({})", TrustStore::dir(&user).display());
                } else {
                    println!("trusted keys ({}):", TrustStore::dir(&user).display());
                    for k in store.keys() {
                        let name = k
                            .path
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        println!(
                            "  {}  (rye {}, ryeos {}){}  {name}",
                            k.fingerprint,
                            k.rye_fingerprint,
                            k.ryeos_fingerprint,
                            if own_fp.as_deref() == Some(k.fingerprint.as_str()) {
                                "  yours"
                            } else {
                                ""
                            }
                        );
                    }
                }
                for (p, why) in store.skipped() {
                    eprintln!("warning: {} is not a public key: {why}", p.display());
                }
            }
        }
        KeysCommand::Export { base64 } => {
            let keys = Keys::load(&user)?;
            if base64 {
                println!("{}", trust::public_key_text(&keys.public_key()));
            } else {
                print!("{}", pem::encode_public(keys.public_key().as_bytes()));
            }
        }
        KeysCommand::Trust { key, json } => {
            let text = if key == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .context("cannot read the key from stdin")?;
                s
            } else if std::path::Path::new(&key).is_file() {
                std::fs::read_to_string(&key).with_context(|| format!("cannot read {key}"))?
            } else {
                key.clone()
            };
            if text.contains("PRIVATE KEY") {
                bail!("that is a private key: trust takes a public key (`kiwi keys export` prints yours); never share a private key");
            }
            let public = trust::parse_public_key(&text).map_err(|e| {
                anyhow::anyhow!(
                    "not a public key ({e}); give a PEM file, `-` for stdin, or the base64 `kiwi keys export --base64` prints"
                )
            })?;
            let fp = TrustStore::trust(&user, &public)?;
            if json {
                println!("{}", json!({"trusted": fp}));
            } else {
                println!("trusted {fp}");
            }
        }
        KeysCommand::Untrust { fingerprint } => {
            let removed = TrustStore::untrust(&user, &fingerprint)?;
            for p in removed {
                println!("removed {}", p.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
