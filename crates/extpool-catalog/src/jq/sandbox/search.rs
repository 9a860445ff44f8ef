//! `contains` and `indices`, with the same answers as jaq's, but charging
//! every comparison to the budget (jaq's are quadratic and cannot be
//! interrupted) and bounding their output as it grows.

use bstr::ByteSlice;
use jaq_core::Exn;
use jaq_core::box_iter::box_once;
use jaq_core::native::v;
use jaq_json::{Rc, Val};

use super::budget::{Budget, JqErr};
use super::size::{ARR, SLOT};
use super::{Cv, Fun, Out, fail, native};

/// `a | contains(b)`: `b`'s strings are substrings, its array elements
/// are each contained in some element, its object values are contained in
/// the same key's value; other values are equal.
pub(super) fn contains(l: &Val, r: &Val, budget: &Budget) -> Result<bool, JqErr> {
    budget.work(1)?;
    Ok(match (l, r) {
        (Val::BStr(a), Val::BStr(b)) | (Val::TStr(a), Val::TStr(b)) => {
            budget.work((a.len() / SLOT) as u64)?;
            a.find(&***b).is_some()
        }
        (Val::Arr(a), Val::Arr(b)) => {
            for y in b.iter() {
                let mut found = false;
                for x in a.iter() {
                    if contains(x, y, budget)? {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return Ok(false);
                }
            }
            true
        }
        (Val::Obj(a), Val::Obj(b)) => {
            for (k, y) in b.iter() {
                match a.get(k) {
                    Some(x) if contains(x, y, budget)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        // Different kinds, or scalars: equality is immediate.
        _ => l == r,
    })
}

/// Indices grow one at a time, each checked against the value limit.
struct Positions<'b> {
    out: Vec<Val>,
    bytes: usize,
    budget: &'b Budget,
}

impl<'b> Positions<'b> {
    fn new(budget: &'b Budget) -> Self {
        Self {
            out: Vec::new(),
            bytes: SLOT + ARR,
            budget,
        }
    }

    fn push(&mut self, i: usize) -> Result<(), JqErr> {
        self.bytes += SLOT;
        self.budget.admit(self.bytes, 1)?;
        self.budget.build(SLOT)?;
        self.out
            .push(Val::from(isize::try_from(i).unwrap_or(isize::MAX)));
        Ok(())
    }

    fn done(self) -> Val {
        Val::Arr(Rc::new(self.out))
    }
}

/// Byte offsets of every occurrence of `needle` in `hay`, overlapping ones
/// included, each search charged.
fn byte_matches(
    hay: &[u8],
    needle: &[u8],
    budget: &Budget,
    mut found: impl FnMut(usize) -> Result<(), JqErr>,
) -> Result<(), JqErr> {
    let mut from = 0;
    while from + needle.len() <= hay.len() {
        let rest = &hay[from..];
        let Some(at) = rest.find(needle) else {
            budget.work((rest.len() / SLOT) as u64 + 1)?;
            break;
        };
        budget.work(((at + needle.len()) / SLOT) as u64 + 1)?;
        found(from + at)?;
        from += at + 1;
    }
    Ok(())
}

/// `indices` of a text string in a text string: character offsets.
fn text_indices(hay: &[u8], needle: &[u8], budget: &Budget) -> Result<Val, JqErr> {
    let mut pos = Positions::new(budget);
    // Byte offsets become character offsets in one pass over the hay.
    let mut chars = hay.char_indices().enumerate().peekable();
    byte_matches(hay, needle, budget, |at| {
        while let Some((_, (start, _, _))) = chars.peek() {
            if *start >= at {
                break;
            }
            chars.next();
        }
        match chars.peek() {
            // Only matches that start a character count, as in jaq.
            Some((i, (start, _, _))) if *start == at => pos.push(*i),
            _ => Ok(()),
        }
    })?;
    budget.work((hay.len() / SLOT) as u64)?;
    Ok(pos.done())
}

/// `indices`: where `y` occurs in `x` (substrings, sub-arrays, elements).
pub(super) fn indices(x: &Val, y: &Val, budget: &Budget) -> Result<Val, JqErr> {
    match (x, y) {
        (Val::BStr(_), Val::BStr(n)) | (Val::TStr(_), Val::TStr(n)) if n.is_empty() => {
            Ok(Positions::new(budget).done())
        }
        (Val::TStr(h), Val::TStr(n)) => text_indices(h, n, budget),
        (Val::BStr(h), Val::BStr(n)) => {
            let mut pos = Positions::new(budget);
            byte_matches(h, n, budget, |at| pos.push(at))?;
            Ok(pos.done())
        }
        (Val::Arr(_), Val::Arr(n)) if n.is_empty() => Ok(Positions::new(budget).done()),
        (Val::Arr(h), Val::Arr(n)) => {
            let mut pos = Positions::new(budget);
            if n.len() <= h.len() {
                for i in 0..=h.len() - n.len() {
                    let mut all = true;
                    for (a, b) in h[i..].iter().zip(n.iter()) {
                        if !equal(a, b, budget)? {
                            all = false;
                            break;
                        }
                    }
                    if all {
                        pos.push(i)?;
                    }
                }
            }
            Ok(pos.done())
        }
        (Val::Arr(h), y) => {
            let mut pos = Positions::new(budget);
            for (i, a) in h.iter().enumerate() {
                if equal(a, y, budget)? {
                    pos.push(i)?;
                }
            }
            Ok(pos.done())
        }
        (x, y) => Err(jaq_core::Error::index(x.clone(), y.clone())),
    }
}

/// `a == b`, charged by the size of the smaller side.
fn equal(a: &Val, b: &Val, budget: &Budget) -> Result<bool, JqErr> {
    match (a, b) {
        (Val::Arr(_) | Val::Obj(_), Val::Arr(_) | Val::Obj(_)) => {
            let units = budget.measure(a)?.bytes.min(budget.measure(b)?.bytes) / SLOT;
            budget.work(units as u64 + 1)?;
        }
        _ => budget.work(1)?,
    }
    Ok(a == b)
}

fn contains_native<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let r = cv.0.pop_var();
    let budget = cv.0.data().budget;
    let checked = budget
        .measure(&cv.1)
        .and_then(|_| budget.measure(&r))
        .and_then(|_| contains(&cv.1, &r, budget));
    match checked {
        Ok(b) => box_once(Ok(Val::from(b))),
        Err(e) => fail(e),
    }
}

fn indices_native<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let y = cv.0.pop_var();
    let budget = cv.0.data().budget;
    let checked = budget
        .measure(&cv.1)
        .and_then(|_| budget.measure(&y))
        .and_then(|_| indices(&cv.1, &y, budget));
    box_once(checked.map_err(Exn::from))
}

/// The natives of this module.
pub(super) fn natives() -> Vec<Fun> {
    vec![
        ("contains", v(1), native(contains_native)),
        ("indices", v(1), native(indices_native)),
    ]
}
