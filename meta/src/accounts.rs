//! Accounts: what owns buckets and objects. Rows in `CF_ACCOUNTS` by
//! canonical id; the root account's id also in `sm_meta`
//! (`KEY_ROOT_ACCOUNT`).
//!
//! Owners stored before accounts existed are access key ids. They are
//! never rewritten: [`resolve`] maps them on read, to the account of the
//! key when it still exists, else to the account the key was adopted into
//! (`Account::legacy_id`), else to root (the key was deleted before the
//! upgrade). New records carry the account id.

use godwit_common::types::{AccessKey, Account, BucketInfo};
use godwit_common::MetaError;

use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::{decode, CF_ACCOUNTS, CF_BUCKETS, CF_KEYS, CF_SM_META, KEY_ROOT_ACCOUNT};

/// A point read from the state machine: the overlay while applying, the
/// database for reads.
pub(crate) type Get<'a> = dyn Fn(&'static str, &[u8]) -> Result<Option<Vec<u8>>, MetaError> + 'a;

/// The longest account name accepted.
const MAX_NAME_LEN: usize = 64;

/// The root account's id, once one exists.
pub(crate) fn root_id(get: &Get) -> Result<Option<String>, MetaError> {
    Ok(get(CF_SM_META, KEY_ROOT_ACCOUNT)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
}

fn load(get: &Get, id: &str) -> Result<Option<Account>, MetaError> {
    get(CF_ACCOUNTS, id.as_bytes())?
        .map(|v| decode(&v))
        .transpose()
}

/// The account behind `owner` as stored (an account id or, on records
/// from before accounts, an access key id). None for an unknown account
/// id, or when nothing maps and no root account exists yet.
pub(crate) fn resolve(get: &Get, owner: &str) -> Result<Option<Account>, MetaError> {
    if let Some(account) = load(get, owner)? {
        return Ok(Some(account));
    }
    if Account::is_canonical_id(owner) {
        return Ok(None);
    }
    let root = root_id(get)?;
    if let Some(raw) = get(CF_KEYS, owner.as_bytes())? {
        let key: AccessKey = decode(&raw)?;
        let id = key.account_id(root.as_deref().unwrap_or_default());
        if let Some(account) = load(get, &id)? {
            return Ok(Some(account));
        }
        if !key.is_root {
            // A key not adopted yet: the account it will become.
            return Ok(Some(Account {
                id,
                name: display_name(&key),
                email: None,
                created_ms: key.created_ms,
                is_root: false,
            }));
        }
    } else if let Some(account) = load(get, &Account::legacy_id(owner))? {
        return Ok(Some(account));
    }
    match root {
        Some(id) => load(get, &id),
        None => Ok(None),
    }
}

/// The canonical id behind `owner` (see [`resolve`]).
pub(crate) fn owner_id(get: &Get, owner: &str) -> Result<Option<String>, MetaError> {
    Ok(resolve(get, owner)?.map(|a| a.id))
}

fn display_name(key: &AccessKey) -> String {
    if key.name.is_empty() {
        key.access_key_id.clone()
    } else {
        key.name.clone()
    }
}

fn name_taken(tx: &Overlay, name: &str, except: &str) -> Result<bool, MetaError> {
    for (_, v) in tx.scan_prefix(CF_ACCOUNTS, b"")? {
        let a: Account = decode(&v)?;
        if a.name == name && a.id != except {
            return Ok(true);
        }
    }
    Ok(false)
}

fn check_name(name: &str) -> Result<(), MetaError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._@+-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(MetaError::InvalidArgument(format!(
            "account name {name:?}: 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 . _ @ + -"
        )))
    }
}

/// Creates `account` when its id is free and its name untaken; a root
/// account when none exists (else the existing root is the answer).
pub(crate) fn put_account(tx: &mut Overlay, account: Account) -> Result<Reply, MetaError> {
    let get = |c, k: &[u8]| tx.get(c, k);
    if account.is_root {
        if let Some(root) = root_id(&get)?.and_then(|id| load(&get, &id).transpose()) {
            return Ok(Reply::Account(root?));
        }
    }
    if !Account::is_canonical_id(&account.id) {
        return Err(MetaError::InvalidArgument(
            "an account id is 64 lower-case hex digits".into(),
        ));
    }
    if let Some(existing) = load(&get, &account.id)? {
        return Ok(Reply::Account(existing));
    }
    check_name(&account.name)?;
    if name_taken(tx, &account.name, &account.id)? {
        return Err(MetaError::InvalidArgument(format!(
            "an account named {} exists already",
            account.name
        )));
    }
    if account.is_root {
        tx.put(
            CF_SM_META,
            KEY_ROOT_ACCOUNT.to_vec(),
            account.id.as_bytes().to_vec(),
        );
    }
    tx.put(
        CF_ACCOUNTS,
        account.id.as_bytes().to_vec(),
        tx.encode(&account),
    );
    Ok(Reply::Account(account))
}

/// Deletes an account that owns no bucket, with its keys.
pub(crate) fn delete_account(tx: &mut Overlay, id: &str) -> Result<Reply, MetaError> {
    let get = |c, k: &[u8]| tx.get(c, k);
    let Some(account) = load(&get, id)? else {
        return Err(MetaError::NoSuchAccount);
    };
    if account.is_root {
        return Err(MetaError::InvalidRequest(
            "the root account cannot be deleted".into(),
        ));
    }
    for (_, v) in tx.scan_prefix(CF_BUCKETS, b"")? {
        let bucket: BucketInfo = decode(&v)?;
        if owner_id(&get, &bucket.owner)?.as_deref() == Some(id) {
            return Err(MetaError::InvalidRequest(format!(
                "account {} owns bucket {}: delete its buckets first",
                account.name, bucket.name
            )));
        }
    }
    let root = root_id(&get)?.unwrap_or_default();
    let mut keys = Vec::new();
    for (k, v) in tx.scan_prefix(CF_KEYS, b"")? {
        let key: AccessKey = decode(&v)?;
        if key.account_id(&root) == id {
            keys.push(k);
        }
    }
    for k in keys {
        tx.delete(CF_KEYS, k);
    }
    tx.delete(CF_ACCOUNTS, id.as_bytes().to_vec());
    Ok(Reply::Done)
}

/// Gives every key without an account one: root's for the root key, an
/// account of its own (`Account::legacy_id`, named after the key) for any
/// other. Returns how many keys changed.
pub(crate) fn adopt_keys(tx: &mut Overlay) -> Result<Reply, MetaError> {
    let get = |c, k: &[u8]| tx.get(c, k);
    let Some(root) = root_id(&get)? else {
        return Err(MetaError::InvalidRequest(
            "no root account: it is made at start-up".into(),
        ));
    };
    let mut adopted = 0;
    for (k, v) in tx.scan_prefix(CF_KEYS, b"")? {
        let mut key: AccessKey = decode(&v)?;
        if !key.account.is_empty() {
            continue;
        }
        let id = key.account_id(&root);
        if tx.get(CF_ACCOUNTS, id.as_bytes())?.is_none() {
            let mut name = display_name(&key);
            if check_name(&name).is_err() || name_taken(tx, &name, &id)? {
                name = format!("key-{}", key.access_key_id);
            }
            let account = Account {
                id: id.clone(),
                name,
                email: None,
                created_ms: key.created_ms,
                is_root: false,
            };
            tx.put(CF_ACCOUNTS, id.as_bytes().to_vec(), tx.encode(&account));
        }
        key.account = id;
        tx.put(CF_KEYS, k, tx.encode(&key));
        adopted += 1;
    }
    Ok(Reply::Count(adopted))
}
