//! The regular-expression natives (`matches`, `split_matches`, `split_`,
//! behind `test`, `match`, `capture`, `scan`, `split`, `sub`, `gsub`), on
//! the same engine and with the same output as jaq's, but bounded: the
//! search is charged before it runs (its cost is the pattern's size times
//! the text's), and the output is measured as it grows.

use bstr::ByteSlice;
use jaq_core::box_iter::box_once;
use jaq_core::{Bind, Exn};
use jaq_json::{Map, Rc, Val};
use regex_bites::bytes::RegexBuilder;

use super::budget::{Budget, JqErr};
use super::size::{ARR, SLOT};
use super::{Cv, Fun, Out, native};

/// The flags jq knows (`g`, `n`, `i`, `x`, `s`, `m`, `l`, `p`).
#[derive(Debug, Default, Clone, Copy)]
struct Flags {
    global: bool,
    skip_empty: bool,
    case_insensitive: bool,
    multi_line: bool,
    dot_all: bool,
    lazy: bool,
    extended: bool,
}

impl Flags {
    fn parse(flags: &str) -> Result<Self, char> {
        let mut f = Self::default();
        for c in flags.chars() {
            match c {
                'g' => f.global = true,
                'n' => f.skip_empty = true,
                'i' => f.case_insensitive = true,
                'm' => f.multi_line = true,
                's' => f.dot_all = true,
                'l' => f.lazy = true,
                'x' => f.extended = true,
                'p' => {
                    f.multi_line = true;
                    f.dot_all = true;
                }
                other => return Err(other),
            }
        }
        Ok(f)
    }
}

/// Character offsets of byte offsets, counted forward (and again from the
/// start when asked about an earlier offset).
struct CharCount<'s> {
    text: &'s [u8],
    byte: usize,
    chars: usize,
}

impl<'s> CharCount<'s> {
    fn new(text: &'s [u8]) -> Self {
        Self {
            text,
            byte: 0,
            chars: 0,
        }
    }

    fn at(&mut self, byte: usize, budget: &Budget) -> Result<usize, JqErr> {
        if byte < self.byte {
            self.byte = 0;
            self.chars = 0;
        }
        let span = self.text.get(self.byte..byte).unwrap_or_default();
        budget.work((span.len() / SLOT) as u64)?;
        self.chars += span.chars().count();
        self.byte = byte;
        Ok(self.chars)
    }
}

fn text(v: &Val) -> Result<&[u8], JqErr> {
    match v {
        Val::TStr(b) => Ok(b),
        other => Err(jaq_core::Error::typ(other.clone(), "string")),
    }
}

fn key(k: &str) -> Val {
    Val::from(k.to_owned())
}

fn int(n: usize) -> Val {
    Val::from(isize::try_from(n).unwrap_or(isize::MAX))
}

/// Runs the regex `re` over the input: mismatched pieces when `split`,
/// matches (arrays of capture objects) when `matches`.
fn run(split: bool, matches: bool, mut cv: Cv<'_>) -> Result<Val, JqErr> {
    let flags = cv.0.pop_var();
    let re = cv.0.pop_var();
    let budget = cv.0.data().budget;
    let flags = text(&flags)?;
    let flags = Flags::parse(&String::from_utf8_lossy(flags))
        .map_err(|c| jaq_core::Error::str(format!("invalid regex flag: {c}")))?;
    let pattern = String::from_utf8_lossy(text(&re)?).into_owned();
    let hay_val = cv.1;
    let hay: &[u8] = text(&hay_val)?;
    // The search costs about the pattern's size for every byte of the text.
    let cost = (pattern.len() as u64 + 1).saturating_mul(hay.len() as u64 + 1);
    budget.work(cost)?;
    let regex = RegexBuilder::new(&pattern)
        .case_insensitive(flags.case_insensitive)
        .multi_line(flags.multi_line)
        .dot_matches_new_line(flags.dot_all)
        .swap_greed(flags.lazy)
        .ignore_whitespace(flags.extended)
        .build()
        .map_err(|e| jaq_core::Error::str(format!("invalid regex: {e}")))?;
    let names: Vec<Option<&str>> = regex.capture_names().collect();
    let sub = |s: &[u8]| match &hay_val {
        Val::TStr(b) => Val::utf8_str(b.slice_ref(s)),
        _ => Val::Null,
    };
    let mut out = Vec::new();
    let mut bytes = SLOT + ARR;
    let mut push = |v: Val, out: &mut Vec<Val>| -> Result<(), JqErr> {
        let m = budget.measure(&v)?;
        bytes = bytes.saturating_add(m.bytes);
        budget.admit(bytes, m.depth + 1)?;
        budget.build(m.bytes)?;
        out.push(v);
        Ok(())
    };
    let mut chars = CharCount::new(hay);
    let mut last = 0;
    for caps in regex.captures_iter(hay) {
        let Some(whole) = caps.get(0) else { continue };
        if flags.skip_empty && whole.as_bytes().is_empty() {
            continue;
        }
        if split {
            push(sub(&hay[last..whole.start()]), &mut out)?;
            last = whole.end();
        }
        if matches {
            let mut groups = Vec::new();
            for (m, name) in caps.iter().zip(names.iter()) {
                let Some(m) = m else { continue };
                let mut obj = Map::default();
                obj.insert(key("offset"), int(chars.at(m.start(), budget)?));
                obj.insert(key("length"), int(m.as_bytes().chars().count()));
                obj.insert(key("string"), sub(m.as_bytes()));
                if let Some(name) = name {
                    obj.insert(key("name"), key(name));
                }
                groups.push(Val::obj(obj));
            }
            push(Val::Arr(Rc::new(groups)), &mut out)?;
        }
        if !flags.global {
            break;
        }
    }
    if split {
        push(sub(&hay[last..]), &mut out)?;
    }
    Ok(Val::Arr(Rc::new(out)))
}

fn matches<'a>(cv: Cv<'a>) -> Out<'a> {
    box_once(run(false, true, cv).map_err(Exn::from))
}

fn split_matches<'a>(cv: Cv<'a>) -> Out<'a> {
    box_once(run(true, true, cv).map_err(Exn::from))
}

fn split<'a>(cv: Cv<'a>) -> Out<'a> {
    box_once(run(true, false, cv).map_err(Exn::from))
}

/// The natives of this module.
pub(super) fn natives() -> Vec<Fun> {
    let vv = || -> Box<[Bind]> { [Bind::Var(()), Bind::Var(())].into() };
    vec![
        ("matches", vv(), native(matches)),
        ("split_matches", vv(), native(split_matches)),
        ("split_", vv(), native(split)),
    ]
}
