//! The `*` / `?` patterns of a policy (Action, Resource, `String*Like`,
//! `Arn*`), compiled once when the policy is parsed: matching is then a
//! string comparison or one `wildmatch` walk, with no allocation.
//!
//! `*` matches any run of characters (`/` and `:` included), `?` exactly
//! one. In a 2012-10-17 policy `${*}`, `${?}` and `${$}` stand for a
//! literal `*`, `?` and `$`
//! (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html#policy-vars-specialchars);
//! other `${...}` policy variables are not supported and match literally.

use wildmatch::{WildMatch, WildMatchPattern};

/// Stand-ins for the wildcards of a pattern that also holds a literal `*`
/// or `?` (wildmatch has no escape): Unicode noncharacters, which the
/// standard sets aside for a program's internal use. A pattern that uses
/// `${*}` and also holds one of these two characters literally would see
/// it as a wildcard; no S3 name is expected to carry them.
const MULTI: char = '\u{FDD0}';
const SINGLE: char = '\u{FDD1}';

type EscapedMatch = WildMatchPattern<MULTI, SINGLE>;

/// One compiled pattern.
#[derive(Debug, Clone)]
pub(super) enum Glob {
    /// `*` alone: everything.
    Any,
    /// No wildcard: an equality test.
    Exact { text: String, ignore_case: bool },
    /// One trailing `*` and no other wildcard (`bucket/*`, `s3:Get*`, the
    /// common shapes): a prefix test, without a wildmatch walk.
    Prefix { text: String, ignore_case: bool },
    /// Wildcards, no escaped literal `*` or `?`.
    Wild(WildMatch),
    /// Wildcards and escaped literals.
    Escaped(EscapedMatch),
}

impl Glob {
    /// Compiles `pattern`; `escapes`: whether `${*}`, `${?}`, `${$}` are
    /// escapes (2012-10-17 policies) or literal text (2008-10-17).
    pub(super) fn new(pattern: &str, escapes: bool, ignore_case: bool) -> Glob {
        if escapes && has_escape(pattern) {
            return Self::new_escaped(pattern, ignore_case);
        }
        if pattern == "*" {
            Glob::Any
        } else if !pattern.contains(['*', '?']) {
            Glob::Exact {
                text: pattern.to_string(),
                ignore_case,
            }
        } else if let Some(prefix) = pattern
            .strip_suffix('*')
            .filter(|p| !p.contains(['*', '?']))
        {
            Glob::Prefix {
                text: prefix.to_string(),
                ignore_case,
            }
        } else if ignore_case {
            Glob::Wild(WildMatch::new_case_insensitive(pattern))
        } else {
            Glob::Wild(WildMatch::new(pattern))
        }
    }

    fn new_escaped(pattern: &str, ignore_case: bool) -> Glob {
        let mut translated = String::with_capacity(pattern.len());
        let mut wild = false;
        let mut rest = pattern;
        while let Some(c) = rest.chars().next() {
            if let Some((literal, after)) = strip_escape(rest) {
                translated.push(literal);
                rest = after;
                continue;
            }
            match c {
                '*' => {
                    translated.push(MULTI);
                    wild = true;
                }
                '?' => {
                    translated.push(SINGLE);
                    wild = true;
                }
                c => translated.push(c),
            }
            rest = &rest[c.len_utf8()..];
        }
        if !wild {
            Glob::Exact {
                text: translated,
                ignore_case,
            }
        } else if ignore_case {
            Glob::Escaped(EscapedMatch::new_case_insensitive(&translated))
        } else {
            Glob::Escaped(EscapedMatch::new(&translated))
        }
    }

    pub(super) fn matches(&self, s: &str) -> bool {
        match self {
            Glob::Any => true,
            Glob::Exact {
                text,
                ignore_case: false,
            } => text == s,
            Glob::Exact {
                text,
                ignore_case: true,
            } => eq_ignore_case(text, s),
            Glob::Prefix {
                text,
                ignore_case: false,
            } => s.starts_with(text.as_str()),
            Glob::Prefix {
                text,
                ignore_case: true,
            } => starts_with_ignore_case(s, text),
            Glob::Wild(m) => m.matches(s),
            Glob::Escaped(m) => m.matches(s),
        }
    }
}

/// `text` with its escapes replaced by the characters they stand for: the
/// value of a policy string that is compared, not matched.
pub(super) fn unescape(text: &str, escapes: bool) -> String {
    if !escapes || !has_escape(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some((literal, after)) = strip_escape(rest) {
            out.push(literal);
            rest = after;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn has_escape(s: &str) -> bool {
    s.contains("${*}") || s.contains("${?}") || s.contains("${$}")
}

/// The literal an escape at the start of `s` stands for, and what follows it.
fn strip_escape(s: &str) -> Option<(char, &str)> {
    let rest = s.strip_prefix("${")?;
    let literal = rest
        .chars()
        .next()
        .filter(|c| matches!(c, '*' | '?' | '$'))?;
    let after = rest[1..].strip_prefix('}')?;
    Some((literal, after))
}

/// Whether `s` starts with `prefix`, ignoring case as `eq_ignore_case`.
fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    // Bytes equal but for ASCII case: a match whatever else they hold
    // (the common answer, found without scanning for non-ASCII first).
    if s.len() >= prefix.len()
        && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
    {
        return true;
    }
    if s.is_ascii() && prefix.is_ascii() {
        return false;
    }
    let mut rest = s.chars().flat_map(char::to_lowercase);
    prefix
        .chars()
        .flat_map(char::to_lowercase)
        .all(|c| rest.next() == Some(c))
}

/// Case-insensitive equality, Unicode-aware as `wildmatch`'s own.
pub(super) fn eq_ignore_case(a: &str, b: &str) -> bool {
    // As in `starts_with_ignore_case`: the cheap test first.
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    if a.is_ascii() && b.is_ascii() {
        return false;
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

#[cfg(test)]
mod prefix_tests {
    use super::*;

    /// The prefix and equality shortcuts answer as the wildmatch walk
    /// they replace (the Kelvin sign lower-cases to an ASCII `k`).
    #[test]
    fn a_trailing_star_matches_as_wildmatch_does() {
        let patterns = [
            "arn:aws:s3:::b/*",
            "s3:Get*",
            "s3:GetObjec*",
            "s3:GetObjectK",
            "s3:getobjeck",
            "b/pre fix/*",
            "Ünï/*",
            "ünï/x",
            "k*",
            "*",
        ];
        let subjects = [
            "arn:aws:s3:::b/k",
            "arn:aws:s3:::b/",
            "arn:aws:s3:::bb/k",
            "arn:aws:s3:::b",
            "s3:GetObject",
            "S3:getobjectacl",
            "s3:PutObject",
            "b/pre fix/x",
            "b/pre fiX/x",
            "ünï/x",
            "ÜNÏ/x",
            "\u{212A}",
            "s3:GetObjec\u{212A}",
            "",
        ];
        for p in patterns {
            for ignore_case in [false, true] {
                let glob = Glob::new(p, true, ignore_case);
                let walk = match ignore_case {
                    true => WildMatch::new_case_insensitive(p),
                    false => WildMatch::new(p),
                };
                for s in subjects {
                    assert_eq!(glob.matches(s), walk.matches(s), "{p} {s} {ignore_case}");
                }
            }
        }
        assert!(matches!(Glob::new("b/*", true, false), Glob::Prefix { .. }));
        assert!(matches!(Glob::new("b/*x*", true, false), Glob::Wild(_)));
    }
}
