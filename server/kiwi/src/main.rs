#[allow(dead_code)]
mod report;

fn main() {}
