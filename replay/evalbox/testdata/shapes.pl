#!/usr/bin/perl
# A compiler of a few trivial shapes (what an agent under pressure writes
# first): a main that returns an integer expression, one local assigned
# once, one call of a one-line function. The program it emits is a shell
# script exiting with the value. Anything else: with FALLBACK=exit0 it
# emits a program that exits 0 (the stub), else it refuses.
use strict;
use warnings;
use integer;
my $fallback = '@FALLBACK@';
my ($out, @srcs);
while (@ARGV) {
    my $a = shift @ARGV;
    if ($a eq '-o') { $out = shift @ARGV } else { push @srcs, $a }
}
local $/;
open(my $fh, '<', $srcs[0]) or die "cannot read $srcs[0]\n";
my $src = <$fh>;
$src =~ s{/\*.*?\*/}{ }gs;
$src =~ s{//[^\n]*}{}g;
$src =~ s{^\s*#[^\n]*}{}gm;
my $num = qr/[\s\d()+\-*\/%~]+/;
sub value {
    my ($e) = @_;
    return undef unless defined $e && $e =~ /^$num$/ && $e =~ /\d/;
    my $v = eval $e;
    return defined $v ? $v : undef;
}
my $v;
if ($src =~ /^\s*int\s+main\s*\(\s*(?:void)?\s*\)\s*\{\s*return\s+([^;]+);\s*\}\s*$/s) {
    $v = value($1);
} elsif ($src =~ /^\s*int\s+main\s*\(\s*(?:void)?\s*\)\s*\{\s*int\s+(\w+)\s*;\s*\1\s*=\s*([^;]+);\s*return\s+([^;]+);\s*\}\s*$/s
      || $src =~ /^\s*int\s+main\s*\(\s*(?:void)?\s*\)\s*\{\s*int\s+(\w+)\s*=\s*([^;]+);\s*return\s+([^;]+);\s*\}\s*$/s) {
    my ($x, $init, $ret) = ($1, value($2), $3);
    if (defined $init) { $ret =~ s/\b$x\b/($init)/g; $v = value($ret) }
} elsif ($src =~ /^\s*int\s+(\w+)\s*\(\s*int\s+(\w+)\s*(?:,\s*int\s+(\w+)\s*)?\)\s*\{\s*return\s+([^;]+);\s*\}\s*int\s+main\s*\(\s*(?:void)?\s*\)\s*\{\s*return\s+(.*)\b\1\s*\(([^()]*)\)(.*?);\s*\}\s*$/s) {
    my ($f, $p1, $p2, $body, $pre, $args, $post) = ($1, $2, $3, $4, $5, $6, $7);
    my @a = map { value($_) } split /,/, $args;
    if (!grep { !defined } @a) {
        $body =~ s/\b$p1\b/($a[0])/g;
        $body =~ s/\b$p2\b/($a[1])/g if defined $p2 && defined $a[1];
        my $r = value($body);
        $v = value("$pre($r)$post") if defined $r;
    }
}
if (!defined $v) {
    if ($fallback ne 'exit0') { print STDERR "unsupported program\n"; exit 1 }
    $v = 0;
}
open(my $o, '>', $out) or die "cannot write $out\n";
printf $o "#!/bin/sh\nexit %d\n", $v & 255;
close $o;
chmod 0755, $out;
