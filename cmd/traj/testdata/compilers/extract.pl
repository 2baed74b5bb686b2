# extract.pl FILE: every basics `// expect: exit=…` line in FILE (any
# bytes: a binary that embeds the suite too) and the text after it, as
# "H <hex expect line> <hex text>" lines.
local $/;
my $d = <>;
while ($d =~ m{// expect: (exit=-?\d+[^\n\0]*)\n}g) {
  my $e = $1;
  my $b = substr($d, pos($d), 4096);
  $b =~ s/\0.*//s;
  $b =~ s{// expect: .*}{}s;
  print "H ", unpack("H*", $e), " ", unpack("H*", $b), "\n";
}
