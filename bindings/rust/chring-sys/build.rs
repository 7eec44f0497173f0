//! Finds libchring through the `pkg-config` command (no crate): link
//! search paths and libraries from `--libs` (each -L directory also as this
//! package's rpath, so its tests run against that library), the header
//! directory from the `--cflags` directory holding chring.h (for the test
//! that checks `sys` against it).
//!
//! PKG_CONFIG_PATH=<build>/meson-uninstalled selects the build tree's
//! chring-uninstalled.pc; the `PKG_CONFIG` variable names another command.
use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> String {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(&program)
        .args(args)
        .arg("chring")
        .output()
        .unwrap_or_else(|e| panic!("chring: cannot run `{}`: {}", program, e));
    if !output.status.success() {
        panic!(
            "chring: `{} {} chring` failed (is PKG_CONFIG_PATH set to a directory holding chring.pc \
             or chring-uninstalled.pc?):\n{}",
            program,
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).expect("pkg-config printed non-UTF-8 text")
}

fn main() {
    for var in ["PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");

    for flag in pkg_config(&["--libs"]).split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
            // DEP_CHRING_LIBDIR for dependents' build scripts: link args
            // (the rpath below) reach only this package's own targets.
            println!("cargo:libdir={}", dir);
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={}", lib);
        } else if flag.starts_with("-Wl,") || flag == "-pthread" {
            println!("cargo:rustc-link-arg={}", flag);
        }
    }
    // Not the includedir variable: in Meson's uninstalled .pc it names no
    // real directory.
    let include = pkg_config(&["--cflags-only-I"])
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-I"))
        .find(|dir| std::path::Path::new(dir).join("chring.h").is_file())
        .map(str::to_string)
        .unwrap_or_else(|| "/usr/include".to_string());
    println!("cargo:rustc-env=CHRING_INCLUDE_DIR={}", include);
    println!("cargo:include={}", include);
}
