/* Prints what check_version.py compares: the header's version macros as
 * this program was compiled against them, then chr_version() and
 * chr_version_string() of the libchring it loaded. */
#include <stdio.h>

#include <chring.h>

int main(void) {
    printf("macros %d %d %d %d\n", CHR_VERSION_MAJOR, CHR_VERSION_MINOR, CHR_VERSION_PATCH,
           CHR_VERSION_NUMBER);
    printf("chr_version %u\n", (unsigned)chr_version());
    const char *text = chr_version_string();
    printf("chr_version_string %s\n", text ? text : "(null)");
    return 0;
}
