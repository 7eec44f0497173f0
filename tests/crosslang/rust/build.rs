//! The chring crate's rpath reaches only its own targets; a program using a
//! libchring outside the loader's path adds it from DEP_CHRING_LIBDIR.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_CHRING_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_CHRING_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}
