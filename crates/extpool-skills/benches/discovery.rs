//! Discovery benchmark (written below).

fn main() {}
