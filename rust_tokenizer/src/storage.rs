//! Where a cleaned file or a tokenized folder lives: a local path, or an object on
//! S3-compatible storage named by a URL `s3://bucket/key`, reached through Apache Arrow's
//! `object_store` crate.
//!
//! Stores are configured as `object_store`'s `AmazonS3Builder::from_env()` reads the standard
//! AWS environment (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, `AWS_REGION` / `AWS_DEFAULT_REGION`, `AWS_ALLOW_HTTP`, ...), with the
//! caller's options (`AmazonS3ConfigKey` names such as `aws_endpoint`) on top. All requests run
//! on one small tokio runtime for the process, created at first use; callers block on it from
//! their own (rayon or Python) threads.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

use crate::error::{Error, RemoteKind, Result};

pub const S3_SCHEME: &str = "s3://";

/// Worker threads of the IO runtime: requests wait on the network, not on the cores, and the
/// cores belong to the encoder.
const RUNTIME_THREADS: usize = 2;

/// An object named by `s3://bucket/key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    pub bucket: String,
    /// The key without leading or trailing `/` (a folder's key is its prefix).
    pub key: String,
}

impl ObjectUrl {
    /// `text` as an S3 URL, `None` when it is not one (a local path).
    pub fn parse(text: &str) -> Result<Option<Self>> {
        let Some(rest) = text.strip_prefix(S3_SCHEME) else {
            if text.starts_with("s3:/") {
                // What pathlib makes of "s3://bucket/key": never a local path anyone meant.
                return Err(Error::Config(format!(
                    "{text}: not an S3 URL (s3://bucket/key) nor a local path; was the URL \
                     passed through pathlib.Path, which merges the two slashes?"
                )));
            }
            return Ok(None);
        };
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        let key = key.trim_matches('/');
        if bucket.is_empty() {
            return Err(Error::Config(format!("{text}: an S3 URL names a bucket")));
        }
        // object_store's path rules: no empty, `.` or `..` segments.
        ObjectPath::parse(key)
            .map_err(|err| Error::Config(format!("{text}: not a usable object key: {err}")))?;
        Ok(Some(ObjectUrl {
            bucket: bucket.to_string(),
            key: key.to_string(),
        }))
    }

    /// The key as `object_store` names it within the bucket.
    pub fn path(&self) -> ObjectPath {
        ObjectPath::from(self.key.as_str())
    }

    /// The object `name` inside this folder.
    pub fn child(&self, name: &str) -> ObjectUrl {
        let key = if self.key.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.key)
        };
        ObjectUrl {
            bucket: self.bucket.clone(),
            key,
        }
    }

    /// The last segment of the key (a folder's name), or the bucket for the bucket's root.
    pub fn name(&self) -> &str {
        self.key
            .rsplit('/')
            .next()
            .filter(|name| !name.is_empty())
            .unwrap_or(&self.bucket)
    }

    /// The URL as a path, for the errors that name a file by its path (row errors).
    pub fn as_path_buf(&self) -> PathBuf {
        PathBuf::from(self.to_string())
    }

    /// The core error for a failed request on this object.
    pub fn error(&self, err: object_store::Error) -> Error {
        let text = error_chain(&err);
        let kind = match &err {
            _ if text.contains("NoSuchBucket") => RemoteKind::NoSuchBucket,
            object_store::Error::NotFound { .. } => RemoteKind::NotFound,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => RemoteKind::PermissionDenied,
            _ if [
                "InvalidAccessKeyId",
                "SignatureDoesNotMatch",
                "AccessDenied",
            ]
            .iter()
            .any(|code| text.contains(code)) =>
            {
                RemoteKind::PermissionDenied
            }
            _ => RemoteKind::Other,
        };
        // The server's own words when it sent an S3 error document, else the whole chain.
        let answer = s3_answer(&text).unwrap_or(text);
        let message = match kind {
            RemoteKind::NotFound => format!(
                "no such object (bucket '{}', key '{}')",
                self.bucket, self.key
            ),
            RemoteKind::NoSuchBucket => format!(
                "no such bucket '{}' (key '{}'): {answer}",
                self.bucket, self.key
            ),
            RemoteKind::PermissionDenied => format!(
                "access denied to bucket '{}', key '{}' (check the credentials): {answer}",
                self.bucket, self.key
            ),
            RemoteKind::Other => answer,
        };
        Error::Remote {
            url: self.to_string(),
            bucket: self.bucket.clone(),
            kind,
            message,
        }
    }
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{S3_SCHEME}{}/{}", self.bucket, self.key)
    }
}

/// An error and its sources on one line: object_store puts the server's answer (the S3 error
/// code) in a source, not in the top message.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let line = inner.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = inner.source();
    }
    text
}

/// `Code: Message` of the S3 error document inside `text`, if there is one.
fn s3_answer(text: &str) -> Option<String> {
    let element = |name: &str| {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = start + text[start..].find(&format!("</{name}>"))?;
        Some(&text[start..end])
    };
    let code = element("Code")?;
    Some(match element("Message") {
        Some(message) => format!("{code}: {message}"),
        None => code.to_string(),
    })
}

/// A cleaned file or a tokenized folder: on this machine or in a bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Local(PathBuf),
    Remote(ObjectUrl),
}

impl Location {
    /// `path` as given: an `s3://` URL is remote, anything else a local path.
    pub fn parse(path: &Path) -> Result<Self> {
        let Some(text) = path.to_str() else {
            return Ok(Location::Local(path.to_path_buf()));
        };
        Ok(match ObjectUrl::parse(text)? {
            Some(url) => Location::Remote(url),
            None => Location::Local(path.to_path_buf()),
        })
    }

    /// The name errors give this location: the path, or the URL.
    pub fn display_path(&self) -> PathBuf {
        match self {
            Location::Local(path) => path.clone(),
            Location::Remote(url) => url.as_path_buf(),
        }
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::Local(path)
    }
}

/// The process's IO runtime: multi-threaded, [`RUNTIME_THREADS`] workers, created at first use.
pub fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(RUNTIME_THREADS)
                .thread_name("hrm-object-store")
                .enable_all()
                .build()
                .map_err(|err| err.to_string())
        })
        .as_ref()
        .map_err(|err| Error::Config(format!("cannot start the object-store runtime: {err}")))
}

/// One store per bucket, built on demand from the environment and the caller's options.
pub struct ObjectStores {
    options: Vec<(AmazonS3ConfigKey, String)>,
    built: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
    /// Tests: this store for every bucket, instead of S3.
    fixed: Option<Arc<dyn ObjectStore>>,
}

impl ObjectStores {
    /// Stores configured by `options` (`AmazonS3ConfigKey` names) over the environment; an
    /// unknown option name is a configuration error naming it.
    pub fn new<'a>(options: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let options = options
            .into_iter()
            .map(|(name, value)| {
                let key = name.parse::<AmazonS3ConfigKey>().map_err(|_| {
                    Error::Config(format!(
                        "unknown storage option {name:?} (expected an object_store \
                         AmazonS3ConfigKey such as aws_endpoint, aws_access_key_id, \
                         aws_secret_access_key, aws_session_token, aws_region, aws_allow_http)"
                    ))
                })?;
                Ok((key, value.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ObjectStores {
            options,
            built: Mutex::new(HashMap::new()),
            fixed: None,
        })
    }

    /// Every bucket served by `store` (tests use `object_store::memory::InMemory`).
    pub fn fixed(store: Arc<dyn ObjectStore>) -> Self {
        ObjectStores {
            options: Vec::new(),
            built: Mutex::new(HashMap::new()),
            fixed: Some(store),
        }
    }

    /// The store holding `url`'s bucket.
    pub fn store_for(&self, url: &ObjectUrl) -> Result<Arc<dyn ObjectStore>> {
        if let Some(store) = &self.fixed {
            return Ok(store.clone());
        }
        let mut built = self.built.lock().unwrap();
        if let Some(store) = built.get(&url.bucket) {
            return Ok(store.clone());
        }
        install_tls_provider();
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&url.bucket);
        for (key, value) in &self.options {
            builder = builder.with_config(*key, value);
        }
        let store: Arc<dyn ObjectStore> = Arc::new(builder.build().map_err(|err| {
            Error::Config(format!(
                "{url}: cannot configure S3 access: {}",
                error_chain(&err)
            ))
        })?);
        built.insert(url.bucket.clone(), store.clone());
        Ok(store)
    }
}

/// rustls is built without a default provider (no aws-lc-rs C build): install ring's for the
/// process, unless something else in it already installed one.
fn install_tls_provider() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths() {
        let url = ObjectUrl::parse("s3://bucket/tokenized/a.jsonl/")
            .unwrap()
            .unwrap();
        assert_eq!(url.bucket, "bucket");
        assert_eq!(url.key, "tokenized/a.jsonl");
        assert_eq!(url.name(), "a.jsonl");
        assert_eq!(
            url.child("tokens.npy").to_string(),
            "s3://bucket/tokenized/a.jsonl/tokens.npy"
        );
        assert_eq!(ObjectUrl::parse("data/cleaned/a.jsonl").unwrap(), None);
        assert!(ObjectUrl::parse("s3:/bucket/key").is_err());
        assert!(ObjectUrl::parse("s3:///key").is_err());
        assert!(ObjectUrl::parse("s3://bucket/a//b").is_err());
        assert_eq!(
            Location::parse(Path::new("s3://b/k.parquet")).unwrap(),
            Location::Remote(ObjectUrl {
                bucket: "b".into(),
                key: "k.parquet".into()
            })
        );
        assert_eq!(
            Location::parse(Path::new("/tmp/x")).unwrap(),
            Location::Local(PathBuf::from("/tmp/x"))
        );
    }

    #[test]
    fn unknown_option_is_named() {
        let err = ObjectStores::new([("aws_endpoint", "http://x"), ("aws_bogus", "1")])
            .err()
            .unwrap();
        assert!(err.to_string().contains("\"aws_bogus\""), "{err}");
        assert!(ObjectStores::new([("aws_allow_http", "true")]).is_ok());
    }

    #[test]
    fn errors_by_kind() {
        let url = ObjectUrl::parse("s3://bkt/dir/x.jsonl").unwrap().unwrap();
        let not_found = url.error(object_store::Error::NotFound {
            path: "dir/x.jsonl".into(),
            source: "404 NoSuchKey".into(),
        });
        assert!(matches!(
            not_found,
            Error::Remote {
                kind: RemoteKind::NotFound,
                ..
            }
        ));
        let no_bucket = url.error(object_store::Error::NotFound {
            path: "dir/x.jsonl".into(),
            source: "<Code>NoSuchBucket</Code>".into(),
        });
        assert!(matches!(
            no_bucket,
            Error::Remote {
                kind: RemoteKind::NoSuchBucket,
                ..
            }
        ));
        assert!(no_bucket.to_string().contains("'bkt'"), "{no_bucket}");
        let denied = url.error(object_store::Error::PermissionDenied {
            path: "dir/x.jsonl".into(),
            source: "InvalidAccessKeyId".into(),
        });
        assert!(matches!(
            denied,
            Error::Remote {
                kind: RemoteKind::PermissionDenied,
                ..
            }
        ));
        let text = denied.to_string();
        assert!(
            text.contains("'bkt'") && text.contains("'dir/x.jsonl'"),
            "{text}"
        );
        let forbidden = url.error(object_store::Error::PermissionDenied {
            path: "dir/x.jsonl".into(),
            source: "403 Forbidden: <Error><Code>SignatureDoesNotMatch</Code>\
                     <Message>The signature differs.</Message></Error>"
                .into(),
        });
        assert_eq!(
            forbidden.to_string(),
            "s3://bkt/dir/x.jsonl: access denied to bucket 'bkt', key 'dir/x.jsonl' (check the \
             credentials): SignatureDoesNotMatch: The signature differs."
        );
    }
}
