//! The Rust side of the cross-language test (see ../../gen_data.c for the
//! input and ../../route_c.c for the output format). Nodes are added one by
//! one in reverse file order; owners come from the Ring, replica lists
//! from a Snapshot.
//!
//! Usage: chring-crosslang DATA OUTPUT
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::process::exit;

use chring::{Member, Options, Ring};

fn unhex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn put_hex(out: &mut String, bytes: &[u8]) {
    if bytes.is_empty() {
        out.push('-');
    }
    for b in bytes {
        write!(out, "{:02x}", b).unwrap();
    }
}

/// One key's line into `line`: its owner's id, then its replicas' ids.
fn route_line(line: &mut String, owner: &[u8], replicas: &[chring::NodeView<'_>]) {
    line.clear();
    put_hex(line, owner);
    for (r, node) in replicas.iter().enumerate() {
        line.push(if r == 0 { ' ' } else { ',' });
        put_hex(line, node.id());
    }
    line.push('\n');
}

fn field<'a>(line: Option<&'a str>, index: usize) -> &'a str {
    line.and_then(|l| l.split(' ').nth(index)).expect("truncated input")
}

mod availability;
mod ringfile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() > 1 && args[1] == "ringfile" {
        return ringfile::main(&args[2..]);
    }
    if args.len() > 1 && args[1] == "availability" {
        return availability::main(&args[2..]);
    }
    if args.len() != 3 {
        eprintln!("usage: chring-crosslang DATA OUTPUT");
        exit(2);
    }
    let data = std::fs::read_to_string(&args[1])?;
    let mut lines = data.lines();
    lines.next(); // chring-crosslang 1
    let opts = lines.next();
    let options =
        Options::default().tokens_per_weight(field(opts, 1).parse()?).seed(u64::from_str_radix(field(opts, 2), 16)?);
    let replicas: usize = field(lines.next(), 1).parse()?;
    let nodes: usize = field(lines.next(), 1).parse()?;
    let members: Vec<(Vec<u8>, u32, Vec<u8>, u64)> = (0..nodes)
        .map(|_| {
            let l = lines.next();
            (unhex(field(l, 0)), field(l, 1).parse().unwrap(), unhex(field(l, 2)), field(l, 3).parse().unwrap())
        })
        .collect();

    let ring = Ring::new(&options)?;
    for (id, weight, zone, tag) in members.iter().rev() {
        ring.add_member(&Member { id, weight: *weight, zone, tag: *tag })?;
    }
    let mut out = BufWriter::new(std::fs::File::create(&args[2])?);
    writeln!(out, "fingerprint {:016x}\ncounts {} {}", ring.fingerprint()?, ring.node_count()?, ring.token_count()?)?;

    let snap = ring.snapshot()?;
    let keys: usize = field(lines.next(), 1).parse()?;
    let mut line = String::new();
    for _ in 0..keys {
        let key = unhex(lines.next().expect("truncated keys"));
        route_line(&mut line, ring.lookup(&key)?.id(), &snap.replicas(&key, replicas)?);
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}
