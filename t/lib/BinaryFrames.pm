# BinaryFrames: memcached binary protocol frames for the tests
# (t/binary.t, t/sasl.t): building requests, reading replies with the
# bounded-time reads of MemcachedTest, and describing replies as short
# strings that tests compare (cas values masked or numbered).
package BinaryFrames;

use strict;
use warnings;

use Exporter qw(import);
use MemcachedTest qw(mc_send read_bytes);

our @EXPORT = qw(
    %OP bin_req bin_read bin_exchange bin_sync bin_stats bin_desc
    incr_ext store_ext
);

our %OP = (
    get => 0x00, set => 0x01, add => 0x02, replace => 0x03, delete => 0x04,
    incr => 0x05, decr => 0x06, quit => 0x07, flush => 0x08, getq => 0x09,
    noop => 0x0a, version => 0x0b, getk => 0x0c, getkq => 0x0d,
    append => 0x0e, prepend => 0x0f, stat => 0x10, setq => 0x11,
    addq => 0x12, replaceq => 0x13, deleteq => 0x14, incrq => 0x15,
    decrq => 0x16, quitq => 0x17, flushq => 0x18, appendq => 0x19,
    prependq => 0x1a, verbosity => 0x1b, touch => 0x1c, gat => 0x1d,
    gatq => 0x1e, sasl_list => 0x20, sasl_auth => 0x21, sasl_step => 0x22,
    gatk => 0x23, gatkq => 0x24,
);

# A request frame.  $op is a name of %OP or a number; options: key, ext,
# value, cas, opaque, and magic/keylen/extlen/bodylen to forge headers.
sub bin_req {
    my ($op, %o) = @_;
    $op = $OP{$op} if exists $OP{$op};
    my ($key, $ext, $val) = map { defined $_ ? $_ : '' } @o{qw(key ext value)};
    my $body = $ext . $key . $val;
    my $cas = $o{cas} || 0;
    return pack('CCnCCnNNNN',
        defined $o{magic} ? $o{magic} : 0x80, $op,
        defined $o{keylen} ? $o{keylen} : length $key,
        defined $o{extlen} ? $o{extlen} : length $ext, 0, 0,
        defined $o{bodylen} ? $o{bodylen} : length $body,
        $o{opaque} || 0, int($cas / 4294967296), $cas % 4294967296) . $body;
}

# extras of set/add/replace and of incr/decr
sub store_ext { my ($flags, $exp) = @_; return pack('NN', $flags, $exp || 0) }
sub incr_ext {
    my ($delta, $initial, $exp) = @_;
    return pack('NNNNN', int($delta / 4294967296), $delta % 4294967296,
        int($initial / 4294967296), $initial % 4294967296, $exp);
}

# One reply as a hashref, or undef on timeout or EOF.
sub bin_read {
    my ($sock, $timeout) = @_;
    my $h = read_bytes($sock, 24, $timeout) // return;
    my ($magic, $op, $kl, $el, $dt, $st, $bl, $opq, $ch, $cl)
        = unpack('CCnCCnNNNN', $h);
    my $body = $bl ? read_bytes($sock, $bl, $timeout) : '';
    return unless defined $body;
    return {
        magic => $magic, opcode => $op, status => $st, opaque => $opq,
        cas => $ch * 4294967296 + $cl, ext => substr($body, 0, $el),
        key => substr($body, $el, $kl), value => substr($body, $el + $kl),
    };
}

# Send $frames and read $n replies (fewer when they stop coming).
sub bin_exchange {
    my ($sock, $frames, $n, $timeout) = @_;
    mc_send($sock, $frames) or return [];
    my @r;
    for (1 .. $n) {
        my $r = bin_read($sock, $timeout) // last;
        push @r, $r;
    }
    return \@r;
}

# Send $frames and a noop; the replies before the noop's (undef when the
# noop's never came: connection closed or timed out).
sub bin_sync {
    my ($sock, $frames, $timeout) = @_;
    mc_send($sock, $frames . bin_req('noop', opaque => 0xfeedf00d))
        or return;
    my @r;
    while (1) {
        my $r = bin_read($sock, $timeout) // return;
        return \@r if $r->{opcode} == $OP{noop} && $r->{opaque} == 0xfeedf00d;
        push @r, $r;
    }
}

# `stat [group]`: { name => value }, the terminator seen or not in _end.
sub bin_stats {
    my ($sock, $group) = @_;
    mc_send($sock, bin_req('stat', key => $group // '')) or return {};
    my %s;
    while (my $r = bin_read($sock)) {
        if ($r->{status} != 0) {
            $s{_status} = $r->{status};
            last;
        }
        if ($r->{key} eq '' && $r->{value} eq '') {
            $s{_end} = 1;
            last;
        }
        $s{ $r->{key} } = $r->{value};
    }
    return \%s;
}

sub _printable {
    my ($s) = @_;
    return $s if $s =~ /^[\x20-\x7e]*$/ && length $s <= 64;
    return 'h:' . unpack('H*', $s) if length $s <= 32;
    return 'len' . length($s) . ':' . unpack('H*', substr($s, 0, 8));
}

# "op/status x=extras k=key v=value c=cas" of one reply.  The cas shows
# as 0, or as C when $cas_names is not given, or else as c1, c2, ... in
# the order distinct values first appear (the map is kept in
# $cas_names), so that replies from two servers compare equal.
sub bin_desc {
    my ($r, $cas_names) = @_;
    return '<none>' unless defined $r;
    my $cas = $r->{cas} == 0 ? '0'
        : !$cas_names ? 'C'
        : ($cas_names->{ $r->{cas} } //= 'c' . (1 + keys %$cas_names));
    my $d = sprintf('%02x/%04x', $r->{opcode}, $r->{status});
    $d .= ' x=' . unpack('H*', $r->{ext}) if length $r->{ext};
    $d .= ' k=' . _printable($r->{key}) if length $r->{key};
    $d .= ' v=' . _printable($r->{value}) if length $r->{value};
    $d .= " c=$cas";
    $d .= sprintf(' magic=%02x', $r->{magic}) if $r->{magic} != 0x81;
    return $d;
}

1;
