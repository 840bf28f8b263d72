#!/usr/bin/perl
# zone_owner.t: an nvm_path= N-zone has one owner at a time (doc/restart.md
# "Warm restart").  A start that will not use the zone's items marks it
# before serving, so that no later start recovers versions an intervening
# run superseded or deleted:
#   - tier_policy=dram over a used zone: the next start is cold (and
#     nvm_restart=require refuses it), whatever that run changed;
#   - nvm_restart=no and a changed geometry (-f): the run's own changes
#     are what a later warm start serves, never the earlier run's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(WIFEXITED WEXITSTATUS);
use Test::More;
use MemcachedTest;

sub server_on {
    my ($file, $more, $args) = @_;
    my $o = "nvm_size=16m,nvm_path=$file,no_lru_crawler";
    $o .= ",$more" if $more;
    return new_memcached(($args // '-m 2 -I 64k -t 2') . " -o $o");
}

# Run 1 stores k=v1 and `gone` and stops in order; run 2 ($more, $args)
# stores k=v2 and deletes `gone` and stops as $stop says; returns the
# server of run 3 (the default options) on the same file.
sub three_runs {
    my ($more, $args, $stop) = @_;
    my $file = shm_file();
    my $one = server_on($file, 'tier_policy=nvm');
    my $s = $one->sock;
    is(send_recv($s, "set k 0 0 2\r\nv1\r\nset gone 0 0 1\r\nx\r\n", n => 2),
       "STORED\r\nSTORED\r\n", 'run 1 stores k=v1 and gone');
    ok($one->stop_graceful, 'run 1 stops in order');
    my $two = server_on($file, $more, $args);
    $s = $two->sock;
    is(send_recv($s, "set k 0 0 2\r\nv2\r\ndelete gone\r\n", n => 2),
       "STORED\r\nNOT_FOUND\r\n",
       "run 2 ($more) stores k=v2 and deletes gone");
    if ($stop eq 'KILL') {
        kill 'KILL', $two->pid;
        $two->wait_exit(20);
    } else {
        ok($two->stop_graceful, 'run 2 stops in order');
    }
    return ($file, $two, server_on($file, 'tier_policy=nvm'));
}

# ---- tier_policy=dram: the zone is disowned ----
for my $stop ('USR1', 'KILL') {
    my ($file, $two, $three) = three_runs('tier_policy=dram', undef, $stop);
    like($two->log_text, qr/N-zone \Q$file\E: unused by this run/,
         "tier_policy=dram says it discards the zone's items ($stop)");
    my $s = $three->sock;
    is(send_recv($s, "get k gone\r\n"), "END\r\n",
       "after a tier_policy=dram run ($stop): neither v1 nor gone comes back");
    is($three->tier_stats->{restart_kind}, 'cold', 'the next start is cold');
    $three->stop;
    # the zone run 3 formatted is its own: run 1's layout is gone for good
}
{
    my $file = shm_file();
    my $one = server_on($file);
    send_recv($one->sock, "set k 0 0 2\r\nv1\r\n");
    ok($one->stop_graceful, 'a zone to restart from');
    my $two = server_on($file, 'tier_policy=dram');
    $two->stop;
    my $r = eval { server_on($file, 'nvm_restart=require'); 1 } ? '' : $@;
    like($r, qr/nvm_restart=require: cannot restart warm/,
         'after a tier_policy=dram run, nvm_restart=require refuses the zone');
}

# ---- nvm_restart=no and a changed geometry: the later run's data ----
for my $case (['nvm_restart=no', undef], ['', '-m 2 -I 64k -t 2 -f 1.5']) {
    my ($more, $args) = @$case;
    my $label = $more || '-f 1.5';
    my ($file, $two, $three) = three_runs($more, $args, 'KILL');
    my $s = $three->sock;
    my $r = send_recv($s, "get k gone\r\n");
    unlike($r, qr/v1|VALUE gone/,
           "after a $label run: neither v1 nor gone comes back");
    $three->stop;
}

done_testing();
