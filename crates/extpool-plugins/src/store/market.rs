//! Marketplaces added to the store, and `NAME@MARKETPLACE` resolved
//! through them: a local marketplace folder is read where it is (as
//! Claude Code reads a `directory` marketplace), a git one is cloned into
//! the store; its file is read by [`crate::marketplace`].

use std::path::PathBuf;

use super::lock::{self, MarketplaceRecord};
use super::source::{Source, check_name};
use super::{Store, StoreError, git};
use crate::limits::Limits;
use crate::marketplace::{self, Marketplace, PluginSource};

impl Store {
    fn marketplaces_file(&self) -> PathBuf {
        self.dir.join("marketplaces.json")
    }

    /// Every marketplace added, by name.
    pub fn marketplaces(&self) -> Result<Vec<MarketplaceRecord>, StoreError> {
        lock::read_marketplaces(&self.marketplaces_file())
    }

    /// The folder of marketplace `record`.
    pub fn marketplace_dir(&self, record: &MarketplaceRecord) -> PathBuf {
        if record.path.is_absolute() {
            record.path.clone()
        } else {
            self.dir.join(&record.path)
        }
    }

    /// Adds the marketplace at `source` (a folder or a git repository),
    /// named by its marketplace file; adding it again refreshes it.
    pub fn add_marketplace(
        &self,
        source: Source,
    ) -> Result<(Marketplace, MarketplaceRecord), StoreError> {
        let (dir, commit, staging) = match &source {
            Source::Path { path } => (path.clone(), None, None),
            Source::Git { url, reference, .. } => {
                let staging = self.staging_dir()?;
                let clone = staging.join("clone");
                let commit = git::clone_at(url, reference.as_deref(), &clone)?;
                (clone, Some(commit), Some(staging))
            }
            Source::Marketplace { .. } => {
                return Err(StoreError::BadSource {
                    spec: source.to_string(),
                    reason: "a marketplace is a folder or a git repository".into(),
                });
            }
        };
        let cleanup = |staging: &Option<PathBuf>| {
            if let Some(s) = staging {
                let _ = std::fs::remove_dir_all(s);
            }
        };
        let read =
            marketplace::read(&dir, &Limits::default()).map_err(|d| StoreError::BadMarketplace {
                path: d.path.clone(),
                message: d.message.clone(),
            });
        let (market, _) = match read {
            Ok(m) => m,
            Err(e) => {
                cleanup(&staging);
                return Err(e);
            }
        };
        if let Err(e) = check_name(&market.name) {
            cleanup(&staging);
            return Err(e);
        }
        let path = match &staging {
            None => dir.clone(),
            Some(_) => {
                let rel = PathBuf::from("marketplaces").join(&market.name);
                let dest = self.dir.join(&rel);
                let parent = self.dir.join("marketplaces");
                std::fs::create_dir_all(&parent).map_err(|e| StoreError::io(&parent, e))?;
                if dest.exists() {
                    std::fs::remove_dir_all(&dest).map_err(|e| StoreError::io(&dest, e))?;
                }
                std::fs::rename(&dir, &dest).map_err(|e| StoreError::io(&dest, e))?;
                cleanup(&staging);
                rel
            }
        };
        let record = MarketplaceRecord {
            name: market.name.clone(),
            source,
            path,
            commit,
        };
        let mut records = self.marketplaces()?;
        records.retain(|r| r.name != record.name);
        records.push(record.clone());
        lock::write_marketplaces(&self.marketplaces_file(), &records)?;
        // Read again where it now is, so its paths are the kept ones.
        let market = marketplace::read(&self.marketplace_dir(&record), &Limits::default())
            .map(|(m, _)| m)
            .unwrap_or(market);
        Ok((market, record))
    }

    /// Where plugin `plugin` of marketplace `name` comes from.
    pub(crate) fn marketplace_entry(&self, plugin: &str, name: &str) -> Result<Source, StoreError> {
        let record = self
            .marketplaces()?
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| StoreError::NoMarketplace {
                name: name.to_owned(),
            })?;
        let dir = self.marketplace_dir(&record);
        let (market, _) = marketplace::read(&dir, &Limits::default()).map_err(|d| {
            StoreError::BadMarketplace {
                path: d.path.clone(),
                message: d.message.clone(),
            }
        })?;
        let entry = market
            .plugins
            .into_iter()
            .find(|p| p.name == plugin)
            .ok_or_else(|| StoreError::NotInMarketplace {
                plugin: plugin.to_owned(),
                marketplace: name.to_owned(),
            })?;
        Ok(match entry.source {
            PluginSource::Path { path } => Source::Path { path },
            PluginSource::Git {
                url,
                subdir,
                reference,
                sha,
            } => Source::Git {
                url,
                reference: sha.or(reference),
                subdir,
            },
        })
    }
}
