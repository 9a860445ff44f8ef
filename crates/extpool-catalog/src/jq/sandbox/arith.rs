//! Checked arithmetic (`+ - * / %`) and comparisons (`== != < <= > >=`).
//!
//! Each operation measures its operands first (so it never walks more than
//! the value limit), refuses a result past the limits before building it,
//! counts what it builds, and charges the work of its walk.

use jaq_core::box_iter::box_once;
use jaq_core::{Exn, ops};
use jaq_json::{Num, Rc, Val};

use super::budget::{Budget, JqErr, int_bits};
use super::size::{ARR, ENTRY, Measure, SLOT, STR};
use super::{Cv, Out, fail, native};

/// The native name of a checked operation.
pub(super) fn math_name(op: ops::Math) -> &'static str {
    match op {
        ops::Math::Add => "__extpool_add",
        ops::Math::Sub => "__extpool_sub",
        ops::Math::Mul => "__extpool_mul",
        ops::Math::Div => "__extpool_div",
        ops::Math::Rem => "__extpool_rem",
    }
}

/// The native name of `. op f` (the left side is the input, taken by value,
/// so that `reduce … (. + [$x])` appends in place).
pub(super) fn math_to_name(op: ops::Math) -> &'static str {
    match op {
        ops::Math::Add => "__extpool_add_to",
        ops::Math::Sub => "__extpool_sub_to",
        ops::Math::Mul => "__extpool_mul_to",
        ops::Math::Div => "__extpool_div_to",
        ops::Math::Rem => "__extpool_rem_to",
    }
}

/// The native name of a checked comparison.
pub(super) fn cmp_name(op: ops::Cmp) -> &'static str {
    match op {
        ops::Cmp::Lt => "__extpool_lt",
        ops::Cmp::Le => "__extpool_le",
        ops::Cmp::Gt => "__extpool_gt",
        ops::Cmp::Ge => "__extpool_ge",
        ops::Cmp::Eq => "__extpool_eq",
        ops::Cmp::Ne => "__extpool_ne",
    }
}

const MATH: [ops::Math; 5] = [
    ops::Math::Add,
    ops::Math::Sub,
    ops::Math::Mul,
    ops::Math::Div,
    ops::Math::Rem,
];
const CMP: [ops::Cmp; 6] = [
    ops::Cmp::Lt,
    ops::Cmp::Le,
    ops::Cmp::Gt,
    ops::Cmp::Ge,
    ops::Cmp::Eq,
    ops::Cmp::Ne,
];

/// `l op r` for the `OP`th operation of [`MATH`].
fn math_native<'a, const OP: usize>(mut cv: Cv<'a>) -> Out<'a> {
    let r = cv.0.pop_var();
    let l = cv.0.pop_var();
    let budget = cv.0.data().budget;
    box_once(checked(MATH[OP], l, r, budget).map_err(Exn::from))
}

/// `. op f`: every output of `f` first, then the input by value for the last one.
fn math_to_native<'a, const OP: usize>(mut cv: Cv<'a>) -> Out<'a> {
    let (f, fc) = cv.0.pop_fun();
    let budget = cv.0.data().budget;
    let mut rights = Vec::new();
    let mut error = None;
    for r in f.run((fc, cv.1.clone())) {
        match r {
            Ok(r) => rights.push(r),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let mut l = Some(cv.1);
    let last = rights.len();
    let mut results: Vec<jaq_core::ValX<'a, Val>> = rights
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let l = if i + 1 == last { l.take() } else { l.clone() };
            checked(MATH[OP], l.unwrap_or_default(), r, budget).map_err(Exn::from)
        })
        .collect();
    results.extend(error.map(Err));
    Box::new(results.into_iter())
}

/// `l op r` for the `OP`th comparison of [`CMP`].
fn cmp_native<'a, const OP: usize>(mut cv: Cv<'a>) -> Out<'a> {
    let r = cv.0.pop_var();
    let l = cv.0.pop_var();
    let budget = cv.0.data().budget;
    match compare(CMP[OP], &l, &r, budget) {
        Ok(b) => box_once(Ok(Val::from(b))),
        Err(e) => fail(e),
    }
}

/// Every checked operation and comparison, by native name.
pub(super) fn natives() -> Vec<super::Fun> {
    use jaq_core::native::v;
    let math: [super::RunPtr; 5] = [
        math_native::<0>,
        math_native::<1>,
        math_native::<2>,
        math_native::<3>,
        math_native::<4>,
    ];
    let math_to: [super::RunPtr; 5] = [
        math_to_native::<0>,
        math_to_native::<1>,
        math_to_native::<2>,
        math_to_native::<3>,
        math_to_native::<4>,
    ];
    let cmp: [super::RunPtr; 6] = [
        cmp_native::<0>,
        cmp_native::<1>,
        cmp_native::<2>,
        cmp_native::<3>,
        cmp_native::<4>,
        cmp_native::<5>,
    ];
    let fun = || [jaq_core::Bind::Fun(())].into();
    let mut out = Vec::new();
    for (op, run) in MATH.into_iter().zip(math) {
        out.push((math_name(op), v(2), native(run)));
    }
    for (op, run) in MATH.into_iter().zip(math_to) {
        out.push((math_to_name(op), fun(), native(run)));
    }
    for (op, run) in CMP.into_iter().zip(cmp) {
        out.push((cmp_name(op), v(2), native(run)));
    }
    out
}

/// A comparison: both sides are measured first, and the walk is work.
pub(super) fn compare(op: ops::Cmp, l: &Val, r: &Val, budget: &Budget) -> Result<bool, JqErr> {
    let ml = budget.measure(l)?;
    let mr = budget.measure(r)?;
    budget.work(((ml.bytes + mr.bytes) / SLOT) as u64)?;
    Ok(op.run(l, r))
}

/// The bytes of a string, if `v` is one.
fn bytes_of(v: &Val) -> Option<&[u8]> {
    match v {
        Val::TStr(b) | Val::BStr(b) => Some(b),
        _ => None,
    }
}

/// One checked arithmetic operation.
pub(super) fn checked(op: ops::Math, l: Val, r: Val, budget: &Budget) -> Result<Val, JqErr> {
    // `+` and `*` count as steps (they may grow values); the others are
    // charged as work.
    if matches!(op, ops::Math::Add | ops::Math::Mul) {
        budget.tick(&l)?;
    } else {
        budget.work(1)?;
    }
    match (op, &l, &r) {
        (ops::Math::Add, Val::TStr(_) | Val::BStr(_), Val::TStr(_) | Val::BStr(_)) => {
            add_strings(l, r, budget)
        }
        (ops::Math::Add, Val::Arr(_), Val::Arr(_)) => add_arrays(l, r, budget),
        (ops::Math::Add, Val::Obj(_), Val::Obj(_)) => add_objects(l, r, budget),
        (ops::Math::Sub, Val::Arr(_), Val::Arr(_)) => {
            let ml = budget.measure(&l)?;
            let mr = budget.measure(&r)?;
            let n = match &r {
                Val::Arr(a) => a.len(),
                _ => 0,
            };
            let log = u64::from((n + 2).ilog2());
            budget.work(((ml.bytes + mr.bytes) / SLOT) as u64 * log)?;
            let out = (l - r)?;
            built(&out, budget)?;
            Ok(out)
        }
        (ops::Math::Mul, Val::Num(_), Val::Num(_)) => {
            if int_bits(&l).saturating_add(int_bits(&r)) > budget.max_int_bits() {
                return Err(budget.trip(super::Trip::Value));
            }
            Ok((l * r)?)
        }
        (ops::Math::Mul, Val::TStr(_) | Val::BStr(_), n)
        | (ops::Math::Mul, n, Val::TStr(_) | Val::BStr(_)) => {
            let s = bytes_of(&l).or_else(|| bytes_of(&r)).unwrap_or_default();
            let times: u128 = match n {
                Val::Num(Num::Int(i)) => (*i).max(0) as u128,
                Val::Num(Num::Float(f)) => f.clamp(0.0, 1e30) as u128,
                Val::Num(Num::BigInt(_) | Num::Dec(_)) => u128::MAX,
                _ => 0,
            };
            let bytes = (s.len() as u128).saturating_mul(times);
            let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            budget.admit(bytes.saturating_add(SLOT + STR), 0)?;
            budget.work((bytes / SLOT) as u64)?;
            budget.build(bytes)?;
            Ok((l * r)?)
        }
        (ops::Math::Mul, Val::Obj(_), Val::Obj(_)) => {
            let ml = budget.measure(&l)?;
            let mr = budget.measure(&r)?;
            budget.work(((ml.bytes + mr.bytes) / SLOT) as u64)?;
            budget.forget(&l);
            let out = (l * r)?;
            built(&out, budget)?;
            Ok(out)
        }
        (ops::Math::Div, Val::TStr(_), Val::TStr(_))
        | (ops::Math::Div, Val::BStr(_), Val::BStr(_)) => split(l, r, budget),
        _ => Ok(op.run(l, r)?),
    }
}

/// Measures a value an operation built and counts it as built.
fn built(v: &Val, budget: &Budget) -> Result<Measure, JqErr> {
    let m = budget.measure(v)?;
    budget.build(m.bytes)?;
    Ok(m)
}

fn add_strings(l: Val, r: Val, budget: &Budget) -> Result<Val, JqErr> {
    let (ll, rl, unique) = match (&l, &r) {
        (Val::TStr(a) | Val::BStr(a), Val::TStr(b) | Val::BStr(b)) => {
            (a.len(), b.len(), a.is_unique())
        }
        _ => (0, 0, false),
    };
    let bytes = ll.saturating_add(rl);
    budget.admit(bytes.saturating_add(SLOT + STR), 0)?;
    // A string held only here grows in place; another is copied.
    let copied = if unique { rl } else { bytes };
    budget.work((copied / SLOT) as u64)?;
    budget.build(copied)?;
    l + r
}

fn add_arrays(l: Val, r: Val, budget: &Budget) -> Result<Val, JqErr> {
    let ml = budget.measure(&l)?;
    let mr = budget.measure(&r)?;
    let (ln, rn, unique) = match (&l, &r) {
        (Val::Arr(a), Val::Arr(b)) => (a.len(), b.len(), Rc::strong_count(a) == 1),
        _ => (0, 0, false),
    };
    let m = Measure {
        bytes: ml.bytes + mr.bytes - (SLOT + ARR),
        depth: ml.depth.max(mr.depth),
    };
    budget.admit(m.bytes, m.depth)?;
    let copied = if unique { rn } else { ln + rn };
    budget.work(copied as u64)?;
    budget.build(copied * SLOT)?;
    // Forgotten, an array held only here grows in place.
    budget.forget(&l);
    let out = (l + r)?;
    budget.remember(&out, m);
    Ok(out)
}

fn add_objects(l: Val, r: Val, budget: &Budget) -> Result<Val, JqErr> {
    let ml = budget.measure(&l)?;
    let mr = budget.measure(&r)?;
    let (Val::Obj(lo), Val::Obj(ro)) = (&l, &r) else {
        return l + r;
    };
    let unique = Rc::strong_count(lo) == 1;
    let mut bytes = ml.bytes;
    for (k, v) in ro.iter() {
        let new = budget.measure(v)?.bytes;
        bytes = match lo.get(k) {
            Some(old) => bytes.saturating_sub(budget.measure(old)?.bytes) + new,
            None => bytes + ENTRY + budget.measure(k)?.bytes + new,
        };
        budget.admit(bytes, 0)?;
    }
    let m = Measure {
        bytes,
        depth: ml.depth.max(mr.depth),
    };
    budget.admit(m.bytes, m.depth)?;
    let copied = if unique {
        ro.len()
    } else {
        lo.len() + ro.len()
    };
    budget.work(copied as u64)?;
    budget.build(copied * (SLOT * 2 + ENTRY))?;
    budget.forget(&l);
    let out = (l + r)?;
    budget.remember(&out, m);
    Ok(out)
}

/// `s / sep`: counts the pieces before cutting.
fn split(l: Val, r: Val, budget: &Budget) -> Result<Val, JqErr> {
    let (s, sep) = (
        bytes_of(&l).unwrap_or_default(),
        bytes_of(&r).unwrap_or_default(),
    );
    budget.work((s.len() / SLOT) as u64 + 1)?;
    let pieces = if s.is_empty() {
        0
    } else if sep.is_empty() {
        s.len()
    } else {
        bstr::ByteSlice::find_iter(s, sep).count() + 1
    };
    let bytes = (SLOT + ARR)
        .saturating_add(pieces.saturating_mul(SLOT + STR))
        .saturating_add(s.len());
    budget.admit(bytes, 1)?;
    budget.build(bytes)?;
    budget.work(pieces as u64)?;
    l / r
}
