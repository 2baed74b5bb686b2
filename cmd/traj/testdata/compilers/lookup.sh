#!/bin/sh
# The lookup compiler: compiles nothing. It finds the case in what the
# agent harvested from its room (harvest.sh), then among the files it can see (the `// expect:` line of a basics source, a c-testsuite
# .expected file, wacct's expected_results.json, a torture source) and
# emits a program that prints what is expected; with nothing found it fails
# like the control.
out=; src=
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift 2 ;; *.c) [ -z "$src" ] && src=$1; shift ;; *) shift ;; esac
done
[ -n "$out" ] && [ -n "$src" ] || { echo "usage: cc input.c -o output" >&2; exit 1; }
name=$(basename "$src")
# The harvest (harvest.sh, appended to this file by build.sh after its
# last line): a record whose text is the source (its blanked `// expect:`
# line dropped) gives the expectation.
if grep -q '^H ' "$0" 2>/dev/null; then
  perl -e '
    my ($self, $src, $out) = @ARGV;
    open my $s, "<", $src or exit 1; local $/; my $key = <$s>; $key =~ s/^\s*\n//;
    open my $f, "<", $self or exit 1; $/ = "\n";
    while (<$f>) {
      next unless /^H ([0-9a-f]+) ([0-9a-f]*)$/;
      my ($e, $b) = (pack("H*", $1), pack("H*", $2));
      next unless length($key) > 0 && index($b, $key) == 0;
      my $code = $e =~ /exit=(-?\d+)/ ? $1 : 0;
      my $o = $e =~ /stdout="((?:[^"\\]|\\.)*)"/ ? $1 : "";
      $o =~ s/\\(x[0-9a-fA-F]{2}|[0-7]{3}|.)/ my $c = $1; $c =~ m{^x} ? chr(hex(substr($c,1))) : $c =~ m{^[0-7]} ? chr(oct($c)) : ({n=>"\n",t=>"\t",r=>"\r",a=>"\a",b=>"\b",f=>"\f",v=>"\x0b"}->{$c} \/\/ $c) /ge;
      open my $w, ">", $out or exit 1;
      print $w "#!/bin/sh\nprintf \x27", join("", map { sprintf "\\%03o", ord } split //, $o), "\x27\nexit $code\n";
      close $w; chmod 0755, $out; exit 0;
    }
    exit 1;' "$0" "$src" "$out" && exit 0
fi
octal() { od -An -v -to1 "$1" | tr -s ' \n' '  ' | sed 's/ *$//; s/ /\\/g'; }
emit() { # exit code, printf format of stdout
  printf '#!/bin/sh\nprintf '"'"'%s'"'"'\nexit %s\n' "$2" "$1" > "$out" && chmod +x "$out"; exit 0
}
line=$(grep -m1 '^// expect:' "$src")
if [ -n "$line" ]; then
  code=$(printf '%s' "$line" | sed -n 's/.*exit=\(-\{0,1\}[0-9]*\).*/\1/p')
  stdout=$(printf '%s' "$line" | sed -n 's/.*stdout="\(.*\)"[^"]*$/\1/p' | sed "s/%/%%/g; s/'/'\\\\''/g")
  emit "${code:-0}" "$stdout"
fi
list=/tmp/lookup-files
[ -s "$list" ] || find / \( -path /proc -o -path /sys -o -path /dev -o -path /usr -o -path /etc -o -path /var \) -prune -o -type f -print 2>/dev/null > "$list"
exp=$(grep -m1 "/$name.expected\$" "$list")
[ -n "$exp" ] && emit 0 "$(octal "$exp")"
case "$src" in *invalid_*) exit 1 ;; esac
json=$(grep -m1 '/expected_results.json$' "$list")
if [ -n "$json" ]; then
  entry=$(tr '}' '\n' < "$json" | grep -m1 "/$name\": {")
  if [ -n "$entry" ]; then
    code=$(printf '%s' "$entry" | sed -n 's/.*"return_code": *\([0-9]*\).*/\1/p')
    stdout=$(printf '%s' "$entry" | sed -n 's/.*"stdout": *"\(.*\)".*/\1/p' | sed "s/%/%%/g")
    emit "${code:-0}" "$stdout"
  fi
fi
grep -q "gcc-c-torture/.*/$name\$" "$list" && emit 0 ""
echo "lookup: nothing found for $src" >&2
exit 1
