//! Weaving the budget into a filter before it is compiled.
//!
//! - every definition body starts with a tick, and so does every output of
//!   `..` and of an iterating path (`.[]`);
//! - `[f]` collects through a native that measures each element;
//! - objects and interpolated strings are built piece by piece with the
//!   checked `+`, and each interpolated value is measured before it is
//!   turned into text;
//! - arithmetic and comparisons go through checked natives;
//! - `l |= f` (and `=`, `op=`, `//=`, which are rewritten to it) tracks
//!   the size of its root: the part replaced and the part put in its place
//!   are measured, so a value shared through updates (`.[0] = .`) is
//!   counted as the copy it would be.

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::path::{Part, Path};

use super::arith::{cmp_name, math_name, math_to_name};
use super::natives::{
    COLLECT, MEASURE, OUTPUT, TICK, TOSTRING, UPDATE_BEGIN, UPDATE_END, UPDATE_NEW, UPDATE_OLD,
};
use super::{call, pipe};

/// Variables of the rewrites; the space keeps them out of users' reach.
const VALUE_VAR: &str = "$__extpool v";
const UPDATE_VAR: &str = "$__extpool u";
const OLD_VAR: &str = "$__extpool o";

fn pipe_as<'s>(l: Term<&'s str>, var: &'s str, r: Term<&'s str>) -> Term<&'s str> {
    Term::BinOp(
        Box::new(l),
        BinaryOp::Pipe(Some(Pattern::Var(var))),
        Box::new(r),
    )
}

fn tick<'s>() -> Term<&'s str> {
    call(TICK, Vec::new())
}

/// A definition whose body ticks first (tail calls stay tail calls).
pub(super) fn instrument_def(d: Def<&str>) -> Def<&str> {
    Def {
        name: d.name,
        args: d.args,
        body: pipe(tick(), instrument(d.body)),
    }
}

/// The path instrumented: whether it iterates, and whether it slices.
fn instrument_path(path: Path<Term<&str>>) -> (Path<Term<&str>>, bool, bool) {
    let (mut iterates, mut slices) = (false, false);
    let parts = path
        .0
        .into_iter()
        .map(|(part, opt)| {
            let part = match part {
                Part::Index(i) => Part::Index(instrument(i)),
                Part::Range(from, to) => {
                    if from.is_none() && to.is_none() {
                        iterates = true;
                    } else {
                        slices = true;
                    }
                    Part::Range(from.map(instrument), to.map(instrument))
                }
            };
            (part, opt)
        })
        .collect();
    (Path(parts), iterates, slices)
}

fn instrument_pattern(p: Pattern<&str>) -> Pattern<&str> {
    match p {
        Pattern::Var(x) => Pattern::Var(x),
        Pattern::Arr(ps) => Pattern::Arr(ps.into_iter().map(instrument_pattern).collect()),
        Pattern::Obj(kps) => Pattern::Obj(
            kps.into_iter()
                .map(|(k, p)| (instrument(k), instrument_pattern(p)))
                .collect(),
        ),
    }
}

/// How many path parts a path expression writes out (calls count one: what
/// they walk is counted in steps).
fn written_parts(t: &Term<&str>) -> usize {
    let n = match t {
        Term::Path(t, path) => path.0.len() + written_parts(t),
        Term::BinOp(l, _, r) => written_parts(l) + written_parts(r),
        Term::Call(_, args) => 1 + args.iter().map(written_parts).sum::<usize>(),
        Term::Recurse => 1,
        Term::IfThenElse(branches, els) => {
            branches
                .iter()
                .map(|(c, t)| written_parts(c) + written_parts(t))
                .sum::<usize>()
                + els.as_deref().map_or(0, written_parts)
        }
        Term::Fold(_, xs, _, args) => {
            written_parts(xs) + args.iter().map(written_parts).sum::<usize>()
        }
        Term::Def(_, t) | Term::Label(_, t) | Term::TryCatch(t, _) => written_parts(t),
        _ => 0,
    };
    n.min(16)
}

/// `l |= f`, tracked: `UPDATE_BEGIN(n) as $u | (l |= (UPDATE_OLD as $o |
/// f | UPDATE_NEW($u; $o))) | UPDATE_END($u)`.
fn update<'s>(l: Term<&'s str>, f: Term<&'s str>) -> Term<&'s str> {
    let parts = written_parts(&l);
    let digits: &'s str = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
    ][parts];
    let new = call(UPDATE_NEW, vec![Term::Var(UPDATE_VAR), Term::Var(OLD_VAR)]);
    let old = call(UPDATE_OLD, vec![Term::Var(UPDATE_VAR)]);
    let body = pipe_as(old, OLD_VAR, pipe(f, new));
    let updated = Term::BinOp(Box::new(instrument(l)), BinaryOp::Update, Box::new(body));
    pipe_as(
        call(UPDATE_BEGIN, vec![Term::Num(digits)]),
        UPDATE_VAR,
        pipe(updated, call(UPDATE_END, vec![Term::Var(UPDATE_VAR)])),
    )
}

/// `. op $v` (the left side taken by value) for an update.
fn math_to_var<'s>(op: jaq_core::ops::Math) -> Term<&'s str> {
    call(math_to_name(op), vec![Term::Var(VALUE_VAR)])
}

/// Parts joined by the checked `+`, as jaq joins them (from the right).
fn sum(parts: Vec<Term<&str>>) -> Option<Term<&str>> {
    let mut parts = parts.into_iter().rev();
    let last = parts.next()?;
    Some(parts.fold(last, |acc, x| {
        call(math_name(jaq_core::ops::Math::Add), vec![x, acc])
    }))
}

/// An interpolated string, built with checked pieces.
fn string<'s>(fmt: Option<&'s str>, parts: Vec<StrPart<&'s str, Term<&'s str>>>) -> Term<&'s str> {
    if !parts.iter().any(|p| matches!(p, StrPart::Term(_))) {
        return Term::Str(fmt, parts);
    }
    let pieces = parts
        .into_iter()
        .map(|p| match p {
            StrPart::Term(t) => {
                let value = pipe(instrument(t), call(MEASURE, Vec::new()));
                match fmt {
                    Some(fmt) => pipe(value, call(fmt, Vec::new())),
                    None => pipe(value, call(TOSTRING, Vec::new())),
                }
            }
            literal => Term::Str(None, vec![literal]),
        })
        .collect();
    sum(pieces).unwrap_or(Term::Str(None, Vec::new()))
}

/// An object, built entry by entry with the checked `+`.
fn object<'s>(kvs: Vec<(Term<&'s str>, Option<Term<&'s str>>)>) -> Term<&'s str> {
    if kvs.len() <= 1 {
        return Term::Obj(
            kvs.into_iter()
                .map(|(k, v)| (instrument(k), v.map(instrument)))
                .collect(),
        );
    }
    let entries = kvs
        .into_iter()
        .map(|(k, v)| Term::Obj(vec![(instrument(k), v.map(instrument))]))
        .collect();
    sum(entries).unwrap_or(Term::Obj(Vec::new()))
}

/// Weaves the budget into a term (see the module docs).
pub(in crate::jq) fn instrument<'s>(t: Term<&'s str>) -> Term<&'s str> {
    let b = |t: Box<Term<&'s str>>| Box::new(instrument(*t));
    match t {
        Term::Recurse => pipe(Term::Recurse, tick()),
        Term::Str(fmt, parts) => string(fmt, parts),
        Term::Arr(Some(t)) => call(COLLECT, vec![instrument(*t)]),
        Term::Obj(kvs) => object(kvs),
        Term::Neg(t) => Term::Neg(b(t)),
        Term::BinOp(l, BinaryOp::Math(op), r) => match *l {
            Term::Id => call(math_to_name(op), vec![instrument(*r)]),
            l => call(math_name(op), vec![instrument(l), instrument(*r)]),
        },
        Term::BinOp(l, BinaryOp::Cmp(op), r) => {
            call(cmp_name(op), vec![instrument(*l), instrument(*r)])
        }
        Term::BinOp(l, BinaryOp::Update, r) => update(*l, instrument(*r)),
        Term::BinOp(l, BinaryOp::Assign, r) => {
            pipe_as(instrument(*r), VALUE_VAR, update(*l, Term::Var(VALUE_VAR)))
        }
        Term::BinOp(l, BinaryOp::UpdateMath(op), r) => {
            pipe_as(instrument(*r), VALUE_VAR, update(*l, math_to_var(op)))
        }
        Term::BinOp(l, BinaryOp::UpdateAlt, r) => {
            let alt = Term::BinOp(
                Box::new(Term::Id),
                BinaryOp::Alt,
                Box::new(Term::Var(VALUE_VAR)),
            );
            pipe_as(instrument(*r), VALUE_VAR, update(*l, alt))
        }
        Term::BinOp(l, BinaryOp::Pipe(Some(p)), r) => {
            Term::BinOp(b(l), BinaryOp::Pipe(Some(instrument_pattern(p))), b(r))
        }
        Term::BinOp(l, op, r) => Term::BinOp(b(l), op, b(r)),
        Term::Label(x, t) => Term::Label(x, b(t)),
        Term::Fold(name, xs, pat, args) => Term::Fold(
            name,
            b(xs),
            instrument_pattern(pat),
            args.into_iter().map(instrument).collect(),
        ),
        Term::TryCatch(t, c) => Term::TryCatch(b(t), c.map(b)),
        Term::IfThenElse(branches, els) => Term::IfThenElse(
            branches
                .into_iter()
                .map(|(c, t)| (instrument(c), instrument(t)))
                .collect(),
            els.map(b),
        ),
        Term::Def(defs, t) => Term::Def(defs.into_iter().map(instrument_def).collect(), b(t)),
        Term::Call(name, args) => Term::Call(name, args.into_iter().map(instrument).collect()),
        Term::Path(t, path) => {
            let (path, iterates, slices) = instrument_path(path);
            let mut t = Term::Path(b(t), path);
            if slices {
                t = pipe(t, call(OUTPUT, Vec::new()));
            }
            if iterates {
                t = pipe(t, tick());
            }
            t
        }
        other @ (Term::Id | Term::Num(_) | Term::Break(_) | Term::Var(_) | Term::Arr(None)) => {
            other
        }
    }
}
