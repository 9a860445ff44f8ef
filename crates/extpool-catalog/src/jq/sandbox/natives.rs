//! The sandbox's own natives: the checks woven into every filter (tick,
//! measure, output), collecting `[f]`, tracking updates, `tostring`,
//! `tojson`, `range` and `fromjson`.

use jaq_core::box_iter::box_once;
use jaq_core::native::v;
use jaq_core::{Bind, Exn};
use jaq_json::{Rc, Val};

use super::budget::{Budget, JqErr, MAX_VALUE_DEPTH};
use super::size::{ARR, ENTRY, Measure, OBJ, SLOT, STR};
use super::{Cv, Ex, Fun, MAX_JSON_DEPTH, Out, Trip, fail, native};

/// Counts a step (definition calls, iterations).
pub(super) const TICK: &str = "__extpool_tick";
/// Measures the value passing through (before it is walked).
pub(super) const MEASURE: &str = "__extpool_measure";
/// Measures and counts a value just built.
pub(super) const OUTPUT: &str = "__extpool_output";
/// `[f]`, checked as it grows.
pub(super) const COLLECT: &str = "__extpool_collect";
/// The updates: begin (root size), old part, new part, end.
pub(super) const UPDATE_BEGIN: &str = "__extpool_update_begin";
pub(super) const UPDATE_OLD: &str = "__extpool_update_old";
pub(super) const UPDATE_NEW: &str = "__extpool_update_new";
pub(super) const UPDATE_END: &str = "__extpool_update_end";
/// String interpolation's conversion, bounded.
pub(super) const TOSTRING: &str = "__extpool_tostring";
/// The input check of a library native: `$expand` (how much larger its
/// output may be than its input) and `$sorts` (1 when it sorts).
pub(super) const INPUT: &str = "__extpool_input";

/// Roots of updates up to this size are measured exactly after the update.
const EXACT_UPDATE_ROOT: usize = 4096;

/// What a pass-through check does with the value.
const K_TICK: u8 = 0;
const K_MEASURE: u8 = 1;
const K_OUTPUT: u8 = 2;

fn check(kind: u8, budget: &Budget, v: &Val) -> Result<(), JqErr> {
    match kind {
        K_TICK => budget.tick(v),
        K_MEASURE => budget.measure(v).map(drop),
        _ => {
            let m = budget.measure(v)?;
            budget.build(m.bytes)
        }
    }
}

/// A check that lets values (and paths, and updates) pass through. In a
/// path or an update nothing is built, so only a tick counts there.
macro_rules! pass {
    ($kind:expr) => {
        native(|cv| match check($kind, cv.0.data().budget, &cv.1) {
            Ok(()) => box_once(Ok(cv.1)),
            Err(e) => fail(e),
        })
        .with_paths(|cv| {
            let checked = match $kind {
                K_TICK => cv.0.data().budget.tick(&cv.1.0),
                _ => Ok(()),
            };
            match checked {
                Ok(()) => box_once(Ok(cv.1)),
                Err(e) => box_once(Err(Exn::from(e))),
            }
        })
        .with_update(|cv, f| {
            let checked = match $kind {
                K_TICK => cv.0.data().budget.tick(&cv.1),
                _ => Ok(()),
            };
            match checked {
                Ok(()) => f(cv.1),
                Err(e) => fail(e),
            }
        })
    };
}

/// `[f]`: each element is measured as it arrives, so the array never
/// passes the limit, however much its elements share.
fn collect<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let (f, fc) = cv.0.pop_fun();
    let budget = cv.0.data().budget;
    let mut items = Vec::new();
    let mut m = Measure {
        bytes: SLOT + ARR,
        depth: 1,
    };
    for x in f.run((fc, cv.1)) {
        let x = match x {
            Ok(x) => x,
            Err(e) => return box_once(Err(e)),
        };
        let step = budget.measure(&x).and_then(|mx| {
            m.bytes = m.bytes.saturating_add(mx.bytes);
            m.depth = m.depth.max(mx.depth + 1);
            budget.admit(m.bytes, m.depth)?;
            budget.build(SLOT)
        });
        if let Err(e) = step {
            return fail(e);
        }
        items.push(x);
    }
    let out = Val::Arr(Rc::new(items));
    budget.remember(&out, m);
    box_once(Ok(out))
}

fn number(n: usize) -> Val {
    Val::from(isize::try_from(n).unwrap_or(isize::MAX))
}

fn as_usize(v: &Val) -> usize {
    match v {
        Val::Num(jaq_json::Num::Int(i)) => usize::try_from(*i).unwrap_or(0),
        _ => 0,
    }
}

/// `l |= f` begins: remembers the root's measure, returns the update's
/// handle (`$parts`: the path parts `l` writes out).
fn update_begin<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let parts = as_usize(&cv.0.pop_var());
    let budget = cv.0.data().budget;
    match budget.measure(&cv.1) {
        Ok(m) => box_once(Ok(number(budget.begin_update(m, parts) as usize))),
        Err(e) => fail(e),
    }
}

/// The size of the part about to be replaced (0 for null: perhaps a part
/// that does not exist yet).
fn update_old<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let id = as_usize(&cv.0.pop_var()) as u64;
    let budget = cv.0.data().budget;
    budget.reach_update(id);
    if let Val::Null = cv.1 {
        return box_once(Ok(number(0)));
    }
    match budget.measure(&cv.1) {
        Ok(m) => box_once(Ok(number(m.bytes))),
        Err(e) => fail(e),
    }
}

/// The new part: measured, and the root grows by the difference.
fn update_new<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let old = Some(as_usize(&cv.0.pop_var())).filter(|&b| b > 0);
    let id = as_usize(&cv.0.pop_var()) as u64;
    let budget = cv.0.data().budget;
    let step = budget
        .measure(&cv.1)
        .and_then(|m| budget.grow_update(id, old, m));
    match step {
        Ok(()) => box_once(Ok(cv.1)),
        Err(e) => fail(e),
    }
}

/// `l |= f` ends: the root's size is known without walking it.
fn update_end<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let id = as_usize(&cv.0.pop_var()) as u64;
    let budget = cv.0.data().budget;
    if let Some(m) = budget.end_update(id) {
        if let Err(e) = budget.admit(m.bytes, m.depth) {
            return fail(e);
        }
        // A small root is measured again, exactly; a large one keeps the
        // upper bound, so a later measure costs nothing (measuring it here
        // would make `reduce … (.[$k] = …)` quadratic).
        if m.bytes <= EXACT_UPDATE_ROOT {
            if let Err(e) = budget.measure(&cv.1) {
                return fail(e);
            }
        } else {
            budget.remember(&cv.1, m);
        }
    }
    box_once(Ok(cv.1))
}

/// A writer that refuses to grow past its limit.
struct Capped {
    buf: Vec<u8>,
    limit: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            return Err(std::io::Error::other("over the value limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON text of `v`, refused past the value limit.
pub(super) fn to_json(v: &Val, budget: &Budget) -> Result<Vec<u8>, JqErr> {
    budget.measure(v)?;
    let limit = budget.cap().saturating_sub(SLOT + STR);
    let mut w = Capped {
        buf: Vec::new(),
        limit,
    };
    let pp = jaq_json::write::Pp::default();
    let written = jaq_json::write::write(&mut w, &pp, 0, v);
    budget.work((w.buf.len() / SLOT) as u64 + 1)?;
    if written.is_err() {
        return Err(budget.trip(Trip::Value));
    }
    budget.build(w.buf.len())?;
    Ok(w.buf)
}

fn tostring<'a>(cv: Cv<'a>) -> Out<'a> {
    match cv.1 {
        Val::TStr(b) | Val::BStr(b) => box_once(Ok(Val::TStr(b))),
        other => match to_json(&other, cv.0.data().budget) {
            Ok(text) => box_once(Ok(Val::utf8_str(text))),
            Err(e) => fail(e),
        },
    }
}

fn tojson<'a>(cv: Cv<'a>) -> Out<'a> {
    match to_json(&cv.1, cv.0.data().budget) {
        Ok(text) => box_once(Ok(Val::utf8_str(text))),
        Err(e) => fail(e),
    }
}

/// A library native's input: measured, its output bounded by `$expand`
/// times its size, its walk charged (times log n when it sorts).
fn input<'a>(mut cv: Cv<'a>) -> Out<'a> {
    let sorts = as_usize(&cv.0.pop_var()) == 1;
    let expand = as_usize(&cv.0.pop_var()).max(1);
    let budget = cv.0.data().budget;
    let step = budget.measure(&cv.1).and_then(|m| {
        budget.admit(m.bytes.saturating_mul(expand), m.depth)?;
        let mut units = (m.bytes / SLOT) as u64 + 1;
        if sorts {
            let n = match &cv.1 {
                Val::Arr(a) => a.len(),
                _ => 0,
            };
            units = units.saturating_mul(u64::from((n + 2).ilog2()) * 2);
        }
        budget.work(units)
    });
    match step {
        Ok(()) => box_once(Ok(cv.1)),
        Err(e) => fail(e),
    }
}

/// `range($from; $upto; $by)` with one tick per output.
fn range<'a>(mut cv: Cv<'a>) -> Out<'a> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let by = cv.0.pop_var();
    let to = cv.0.pop_var();
    let from = cv.0.pop_var();
    let budget = cv.0.data().budget;
    let cmp = by.partial_cmp(&Val::from(0usize)).unwrap_or(Equal);
    let mut next = Some(from);
    Box::new(std::iter::from_fn(move || {
        let x = next.take()?;
        let go = match cmp {
            Greater => x < to,
            Less => x > to,
            Equal => x != to,
        };
        if !go {
            return None;
        }
        if let Err(e) = budget.tick(&x) {
            return Some(Err(Exn::from(e)));
        }
        match x.clone() + by.clone() {
            Ok(n) => next = Some(n),
            Err(e) => return Some(Err(Exn::from(e))),
        }
        Some(Ok(x))
    }))
}

/// The deepest nesting of JSON text and an upper estimate of the memory
/// its values take (strings skipped, so the scan is linear).
pub(super) fn json_estimate(text: &[u8]) -> (usize, usize) {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    // Whether each open container is an object (its elements cost more).
    let mut objects: Vec<bool> = Vec::new();
    let mut bytes = SLOT;
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => bytes += 1,
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                bytes += STR;
            }
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
                bytes += if b == b'{' { OBJ + ENTRY + SLOT } else { ARR };
                if objects.len() <= MAX_JSON_DEPTH {
                    objects.push(b == b'{');
                }
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                objects.pop();
            }
            b',' => {
                let in_object = objects.last().copied().unwrap_or(false);
                bytes += if in_object { ENTRY + 2 * SLOT } else { SLOT };
            }
            b' ' | b'\t' | b'\n' | b'\r' | b':' => {}
            _ => bytes += 1,
        }
        // Every value has a slot; a container's first element has one too.
        if matches!(b, b'[' | b'{') {
            bytes += SLOT;
        }
    }
    (max, bytes)
}

/// `fromjson` with a nesting limit, so a hostile string cannot exhaust the
/// stack, and a size estimate checked before parsing.
fn fromjson<'a>(cv: Cv<'a>) -> Out<'a> {
    let budget = cv.0.data().budget;
    if let Err(e) = budget.tick(&cv.1) {
        return fail(e);
    }
    let bytes = match &cv.1 {
        Val::TStr(b) | Val::BStr(b) => b.clone(),
        other => return fail(jaq_core::Error::typ(other.clone(), "string")),
    };
    let (depth, estimate) = json_estimate(&bytes);
    if depth > MAX_JSON_DEPTH {
        return fail(jaq_core::Error::str(format!(
            "cannot parse as JSON: nested deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    let step = budget
        .work((bytes.len() / SLOT) as u64 + 1)
        .and_then(|()| budget.admit(estimate, depth.min(MAX_VALUE_DEPTH)))
        .and_then(|()| budget.build(estimate));
    if let Err(e) = step {
        return fail(e);
    }
    // The parser keeps yielding the same error once it fails: stop there.
    let mut values: Vec<Ex<'a>> = Vec::new();
    for item in jaq_json::read::parse_many(&bytes) {
        match item {
            Ok(v) => {
                // Each parsed value is a step: "1 1 1 …" cannot flood memory.
                if let Err(e) = budget.tick(&v) {
                    values.push(Err(Exn::from(e)));
                    break;
                }
                values.push(Ok(v));
            }
            Err(e) => {
                let msg = format!("cannot parse as JSON: {e}");
                values.push(Err(Exn::from(jaq_core::Error::str(msg))));
                break;
            }
        }
    }
    Box::new(values.into_iter())
}

/// Every native of this module.
pub(super) fn natives() -> Vec<Fun> {
    let fun = || -> Box<[Bind]> { [Bind::Fun(())].into() };
    vec![
        (TICK, v(0), pass!(K_TICK)),
        (MEASURE, v(0), pass!(K_MEASURE)),
        (OUTPUT, v(0), pass!(K_OUTPUT)),
        (COLLECT, fun(), native(collect)),
        (UPDATE_BEGIN, v(1), native(update_begin)),
        (UPDATE_OLD, v(1), native(update_old)),
        (UPDATE_NEW, v(2), native(update_new)),
        (UPDATE_END, v(1), native(update_end)),
        (TOSTRING, v(0), native(tostring)),
        (INPUT, v(2), native(input)),
        ("tojson", v(0), native(tojson)),
        ("range", v(3), native(range)),
        ("fromjson", v(0), native(fromjson)),
    ]
}
