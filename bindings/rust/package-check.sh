#!/bin/sh
# The crates as a registry would serve them: `cargo package --offline` for
# chring-sys, then chring (whose dependency on chring-sys then resolves to
# the .crate just made), then a new project in an empty directory that
# depends on `chring = "0.1.0"` builds from the two .crate files alone and
# prints a node id. No registry is reachable here, so a directory source
# made of the unpacked .crate files stands in for crates.io (the way
# `cargo vendor` does). libchring comes from pkg-config, as always.
#
#   package-check.sh     (CARGO: the cargo to run; CARGO_TARGET_DIR: where
#                         the packages go, default a temporary directory)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cargo=${CARGO:-cargo}
work=$(mktemp -d "${TMPDIR:-/tmp}/chring-crates.XXXXXX")
trap 'rm -rf "$work"' EXIT
target=${CARGO_TARGET_DIR:-$work/target}
export CARGO_TARGET_DIR="$target"
vendor=$work/vendor
mkdir -p "$vendor"

# vendor CRATE: unpacks a .crate into the directory source.
vendor() {
    tar -xzf "$1" -C "$vendor"
    dir=$vendor/$(basename "$1" .crate)
    printf '{"files":{},"package":"%s"}\n' "$(sha256sum "$1" | cut -d' ' -f1)" >"$dir/.cargo-checksum.json"
}
registry() {
    "$cargo" --config 'source.crates-io.replace-with="chring-vendored"' \
        --config "source.chring-vendored.directory=\"$vendor\"" "$@"
}

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/Cargo.toml" | head -1)
rm -f "$target/package/chring-sys-$version.crate" "$target/package/chring-$version.crate"
"$cargo" package --offline --allow-dirty --quiet --manifest-path "$here/chring-sys/Cargo.toml"
vendor "$target/package/chring-sys-$version.crate"
registry package --offline --allow-dirty --quiet --manifest-path "$here/Cargo.toml" -p chring
vendor "$target/package/chring-$version.crate"
echo "packaged and verified: chring-sys-$version.crate, chring-$version.crate"

app=$work/app
mkdir -p "$app/src"
cat >"$app/Cargo.toml" <<TOML
[package]
name = "app"
version = "0.0.0"
edition = "2021"

[dependencies]
chring = "$version"
TOML
cat >"$app/src/main.rs" <<'RS'
fn main() -> Result<(), chring::Error> {
    let ring = chring::Ring::new(&chring::Options::default())?;
    ring.add("cache-a", 1)?;
    ring.add("cache-b", 2)?;
    println!("{}", ring.lookup("user:42")?);
    Ok(())
}
RS
out=$(cd "$app" && CARGO_TARGET_DIR="$work/app-target" registry run --offline --quiet)
[ "$out" = "cache-b" ] || { echo "the new project printed '$out', not cache-b" >&2; exit 1; }
echo "a new project with chring = \"$version\" builds from the .crate files and prints $out"
