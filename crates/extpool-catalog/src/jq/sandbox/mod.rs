//! The jaq sandbox: which filters exist, and the budget that bounds them.
//!
//! jaq has no fuel counter, so the budget is woven into the program before
//! it is compiled (see [`instrument`]). A tick counts a step and checks the
//! deadline and the stack. Values are measured where they are built and
//! before they are walked (see [`size`]): shared structure counts as the
//! copy it would be, so no value can pass the value limit however it was
//! put together, no builtin walks more than that limit, the walks are
//! charged as work, and everything built is counted against a total. Once
//! the budget trips it stays tripped: every later check fails, so `try`
//! cannot swallow it, and the caller reads the typed cause from the budget,
//! not from a message.
//!
//! Filters that touch the outside world are not installed: `env`, `$ENV`,
//! `input`, `inputs`, `now`, `localtime`, `strflocaltime`, `halt`,
//! `debug`, `stderr`, module `import`/`include` (the user's filter is
//! parsed as a single term, and the loader cannot read files).

mod arith;
mod budget;
pub(super) mod instrument;
mod library;
mod natives;
mod regex;
mod search;
mod size;

use jaq_core::box_iter::{BoxIter, box_once};
use jaq_core::load::parse::{Def, Term};
use jaq_core::{DataT, Exn};
use jaq_json::Val;

pub(super) use budget::{Bounds, Budget, MAX_VALUE_DEPTH, Trip, WORK_PER_STEP};
pub(super) use instrument::instrument;

/// Deepest JSON `fromjson` parses (jaq's parser recurses once per level).
pub(super) const MAX_JSON_DEPTH: usize = 512;
/// Standard definitions that depend on withheld natives.
const WITHHELD_DEFS: &[&str] = &["stderr", "debug", "halt", "halt_error"];

/// The data natives can see: the lookup table and the budget.
#[derive(Clone)]
pub(super) struct Data<'a> {
    lut: &'a jaq_core::Lut<Sandbox>,
    budget: &'a Budget,
}

impl<'a> Data<'a> {
    pub(super) fn new(lut: &'a jaq_core::Lut<Sandbox>, budget: &'a Budget) -> Self {
        Self { lut, budget }
    }
}

impl<'a> jaq_core::data::HasLut<'a, Sandbox> for Data<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<Sandbox> {
        self.lut
    }
}

/// The data kind of sandboxed filters: JSON values plus a budget.
pub(super) struct Sandbox;

impl DataT for Sandbox {
    type V<'a> = Val;
    type Data<'a> = Data<'a>;
}

type Cv<'a> = jaq_core::Cv<'a, Sandbox>;
type Ex<'a> = jaq_core::ValX<'a, Val>;
type Out<'a> = jaq_core::ValXs<'a, <Sandbox as DataT>::V<'a>>;
type Fun = jaq_core::native::Fun<Sandbox>;
type RunPtr = jaq_core::RunPtr<Sandbox>;

/// A native from a run function (typed here, so the function coerces).
fn native(run: RunPtr) -> jaq_core::Native<Sandbox> {
    jaq_core::Native::<Sandbox>::new(run)
}

fn fail<'a>(e: jaq_core::Error<Val>) -> BoxIter<'a, Ex<'a>> {
    box_once(Err(Exn::from(e)))
}

fn call<'s>(name: &'s str, args: Vec<Term<&'s str>>) -> Term<&'s str> {
    Term::Call(name, args)
}

fn pipe<S>(l: Term<S>, r: Term<S>) -> Term<S> {
    Term::BinOp(
        Box::new(l),
        jaq_core::load::parse::BinaryOp::Pipe(None),
        Box::new(r),
    )
}

/// Every native the sandbox installs, and the definitions that check the
/// library's natives (they come first in the prelude).
pub(super) fn natives() -> (Vec<Fun>, Vec<Def<&'static str>>) {
    let (mut funs, checks) = library::natives();
    funs.extend(natives::natives());
    funs.extend(arith::natives());
    funs.extend(search::natives());
    funs.extend(regex::natives());
    (funs, checks)
}

/// The standard definitions, instrumented, without the withheld ones,
/// after the checking definitions of the library's natives.
pub(super) fn prelude<'s>(checks: Vec<Def<&'static str>>) -> impl Iterator<Item = Def<&'s str>> {
    let standard = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .filter(|d| !WITHHELD_DEFS.contains(&d.name))
        .map(|d: Def<&'static str>| -> Def<&'s str> { instrument::instrument_def(d) });
    checks.into_iter().chain(standard)
}
