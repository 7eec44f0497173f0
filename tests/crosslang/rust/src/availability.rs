//! The Rust side of the availability cross-language test (availability.py):
//! the same output as availability_c.c, the ring following the file with a
//! Follower; owners from the Ring (checked against a Snapshot's batch),
//! replica lists from the Snapshot.
use std::io::{BufWriter, Write};

use chring::{Follower, Options, Outcome, Ring};

use crate::{route_line, unhex};

type Res = Result<(), Box<dyn std::error::Error>>;

pub fn main(args: &[String]) -> Res {
    if args.len() != 3 {
        return Err("usage: chring-crosslang availability RINGFILE KEYS OUTPUT".into());
    }
    let ring = Ring::new(&Options::default())?;
    let follower = Follower::new(&ring, &args[0])?;
    match follower.check()? {
        Outcome::Applied(_) => {}
        other => return Err(format!("{}: the first check: {:?}", args[0], other).into()),
    }
    let avail = ring.availability()?;
    let members = ring.node_count()?;
    let keys: Vec<Vec<u8>> = std::fs::read_to_string(&args[1])?.split_whitespace().map(unhex).collect();
    let snap = ring.snapshot()?;
    let mut batch = vec![0u32; keys.len()];
    snap.lookup_batch(&keys, &mut batch)?;

    let mut out = BufWriter::new(std::fs::File::create(&args[2])?);
    writeln!(
        out,
        "fingerprint {:016x} availability {:016x} panic {} down {} applied {:016x}",
        ring.fingerprint()?,
        avail.digest,
        avail.panic as u32,
        avail.down,
        follower.state().applied_availability.unwrap_or(0)
    )?;
    let mut line = String::new();
    for (k, key) in keys.iter().enumerate() {
        let owner = ring.lookup(key)?;
        if owner.index() != batch[k] as usize {
            return Err(format!("key {}: the batch says node {}, the lookup {}", k, batch[k], owner.index()).into());
        }
        route_line(&mut line, owner.id(), &snap.replicas(key, members)?);
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}
