//! The Rust side of the ring-file cross-language test (ringfile.py): the
//! same two modes as ringfile_c.c.
use chring::{Export, Member, Options, Placement, Ring};

use crate::unhex;

type Res = Result<(), Box<dyn std::error::Error>>;

pub fn main(args: &[String]) -> Res {
    match args.first().map(String::as_str) {
        Some("build") if args.len() == 4 => build(&args[1], &args[2], &args[3]),
        Some("load") => {
            for path in &args[1..] {
                let (ring, _) = Ring::from_file(path, &Options::default())?;
                let text = ring.export(Export::default())?;
                let same = if text == std::fs::read(path)? { "same" } else { "differs" };
                println!("{:016x} {}", ring.fingerprint()?, same);
            }
            Ok(())
        }
        _ => Err("usage: chring-crosslang ringfile build SPEC OUTDIR LANG | ringfile load FILE...".into()),
    }
}

fn finish(ring: Option<Ring>, dir: &str, lang: &str, n: usize) -> Res {
    if let Some(ring) = ring {
        std::fs::write(format!("{}/{}-{}.txt", dir, lang, n), ring.export(Export::default())?)?;
        std::fs::write(format!("{}/{}-{}.json", dir, lang, n), ring.export(Export { json: true, revision: None })?)?;
    }
    Ok(())
}

fn build(spec: &str, dir: &str, lang: &str) -> Res {
    let mut ring: Option<Ring> = None;
    let (mut rings, mut tag) = (0usize, 0u64);
    for line in std::fs::read_to_string(spec)?.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && f[0] == "ring" {
            if ring.is_some() {
                finish(ring.take(), dir, lang, rings)?;
                rings += 1;
            }
            let placement = match f[1] {
                "0" => Placement::Native,
                "1" => Placement::Ketama,
                "2" => Placement::KetamaUnweighted,
                "3" => Placement::Nginx,
                p => return Err(format!("placement {}", p).into()),
            };
            let opts = Options::default().placement(placement).tokens_per_weight(f[2].parse()?).seed(f[3].parse()?);
            ring = Some(Ring::new(&opts)?);
            tag = 0;
        } else if f.len() == 4 && f[0] == "node" {
            let (id, zone) = (unhex(f[1]), unhex(f[3]));
            let r = ring.as_ref().ok_or("node before ring")?;
            r.add_member(&Member { id: &id, weight: f[2].parse()?, zone: &zone, tag })?;
            tag += 1;
        }
    }
    finish(ring, dir, lang, rings)
}
