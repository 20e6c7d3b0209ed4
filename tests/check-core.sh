#!/bin/sh
# The purity check of policy/ and mode/: no forbidden includes or calls in
# the sources, and libcore.a references no symbol outside a small libc set.
set -eu
lib=${1:-build/libcore.a}
fail=0

bad=$(grep -nE '#include <(event2|curl|json-c|libpq|openssl|pthread|unistd|sys/)|[^_a-z](time|getenv|printf|fprintf|fopen|puts|rand|clock_gettime|gettimeofday|socket|exit|abort)\(' \
	mode/*.[ch] policy/*.[ch] | grep -v 'snprintf\|vsnprintf' || true)
if [ -n "$bad" ]; then
	echo "check-core: forbidden include or call in the core:" >&2
	echo "$bad" >&2
	fail=1
fi

allowed='^(malloc|calloc|realloc|free|memcpy|memmove|memset|memcmp|memchr|strlen|strcmp|strncmp|strchr|strrchr|strstr|strdup|strndup|strtol|strtoll|strtod|strtoul|snprintf|vsnprintf|qsort|bsearch|__stack_chk_fail|__assert_fail|__ctype_b_loc|__ctype_tolower_loc|__ctype_toupper_loc|__isoc99_sscanf|__isoc23_strtol|__isoc23_strtoul|exp|log|sqrt|lround|round|__isoc23_strtoll|strspn|strcspn|strncpy|strcpy|strcat|strncat|__asan_.*|__ubsan_.*|__sanitizer.*|_GLOBAL_OFFSET_TABLE_|__memcpy_chk|__snprintf_chk|__vsnprintf_chk|__strcpy_chk|__memset_chk)$'
ext=$(nm -u "$lib" 2>/dev/null | awk 'NF==2 {print $2}' | sort -u)
defined=$(nm --defined-only "$lib" 2>/dev/null | awk 'NF==3 {print $3}' | sort -u)
for s in $ext; do
	echo "$defined" | grep -qx "$s" && continue
	echo "$s" | grep -qE "$allowed" && continue
	echo "check-core: libcore.a calls $s, which is not in the pure set" >&2
	fail=1
done
[ $fail = 0 ] && echo "check-core: policy/ and mode/ are pure"
exit $fail
