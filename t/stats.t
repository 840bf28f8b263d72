#!/usr/bin/perl
# stats.t: every field that prometheus memcached_exporter and memcached-tool
# read exists in `stats`, `stats settings`, `stats items`, `stats slabs`,
# `stats sizes` and `stats conns`; counters move with traffic; `stats`
# names tiercached and its version after memcached's fields while `version`
# keeps memcached's reply; `stats reset`; `stats detail on|dump|off`;
# `stats cachedump` format and errors.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached('-m 64 -c 500 -t 2');
my $sock = $server->sock;

my @general = qw(
    pid uptime time version libevent pointer_size rusage_user rusage_system
    max_connections curr_connections total_connections rejected_connections
    connection_structures reserved_fds cmd_get cmd_set cmd_flush cmd_touch
    cmd_meta get_hits get_misses get_expired get_flushed delete_misses
    delete_hits incr_misses incr_hits decr_misses decr_hits cas_misses
    cas_hits cas_badval touch_hits touch_misses store_too_large
    store_no_memory auth_cmds auth_errors bytes_read bytes_written
    limit_maxbytes accepting_conns listen_disabled_num
    time_in_listen_disabled_us threads conn_yields hash_power_level
    hash_bytes hash_is_expanding slab_reassign_rescues
    slab_reassign_chunk_rescues slab_reassign_evictions_nomem
    slab_reassign_inline_reclaim slab_reassign_busy_items
    slab_reassign_busy_deletes slab_reassign_running slabs_moved
    lru_crawler_running lru_crawler_starts lru_maintainer_juggles
    malloc_fails bytes curr_items total_items slab_global_page_pool
    expired_unfetched evicted_unfetched evicted_active evictions reclaimed
    crawler_reclaimed crawler_items_checked lrutail_reflocked moves_to_cold
    moves_to_warm moves_within_lru direct_reclaims lru_bumps_dropped
);
my @settings = qw(
    maxbytes maxconns tcpport udpport inter verbosity oldest evictions
    domain_socket umask shutdown_command growth_factor chunk_size
    num_threads num_threads_per_udp stat_key_prefix detail_enabled
    reqs_per_event cas_enabled tcp_backlog binding_protocol
    auth_enabled_sasl auth_enabled_ascii item_size_max maxconns_fast
    hashpower_init slab_reassign slab_automove slab_automove_ratio
    slab_automove_window slab_chunk_max lru_crawler lru_crawler_sleep
    lru_crawler_tocrawl tail_repair_time flush_enabled dump_enabled
    hash_algorithm lru_maintainer_thread lru_segmented hot_lru_pct
    warm_lru_pct hot_max_factor warm_max_factor temp_lru temporary_ttl
    idle_timeout watcher_logbuf_size worker_logbuf_size read_buf_mem_limit
    track_sizes
);
my @items = qw(
    number number_hot number_warm number_cold age_hot age_warm age
    mem_requested evicted evicted_nonzero evicted_time outofmemory
    tailrepairs reclaimed expired_unfetched evicted_unfetched evicted_active
    crawler_reclaimed crawler_items_checked lrutail_reflocked moves_to_cold
    moves_to_warm moves_within_lru direct_reclaims hits_to_hot hits_to_warm
    hits_to_cold hits_to_temp
);
my @slabs = qw(
    chunk_size chunks_per_page total_pages total_chunks used_chunks
    free_chunks free_chunks_end get_hits cmd_set delete_hits incr_hits
    decr_hits cas_hits cas_badval touch_hits
);

# traffic first, so per-class stats exist
send_recv($sock, "set a 0 0 5\r\nhello\r\n");
send_recv($sock, "get a\r\n");
send_recv($sock, "get nokey\r\n");
send_recv($sock, "set big 0 0 5000\r\n" . ('x' x 5000) . "\r\n");

my $st = $server->stats;
my @missing = grep { !exists $st->{$_} } @general;
is("@missing", '', 'stats: every general field present');
like($st->{_raw}, qr/\A(?:STAT \S+ [^\r\n]*\r\n)+END\r\n\z/, 'stats: STAT lines then END');
is($st->{version}, '1.6.18', 'version 1.6.18');
reply_is(send_recv($sock, "version\r\n"), "VERSION 1.6.18\r\n",
    'version command keeps memcached\'s reply');

# the server names itself after every memcached field, where clients that
# parse memcached's stats skip names they do not know
my ($pkg_version) = do {
    open my $ac, '<', repo_root() . '/configure.ac' or die "configure.ac: $!";
    map { /^AC_INIT\(\[tiercached\], \[([^\]]+)\]/ ? $1 : () } <$ac>;
};
is($st->{server}, 'tiercached', 'stats: server names tiercached');
is($st->{tiercached_version}, $pkg_version,
    'stats: tiercached_version is the package version (configure.ac)');
my @order = $st->{_raw} =~ /^STAT (\S+) /mg;
is_deeply([@order[-2, -1]], ['server', 'tiercached_version'],
    'stats: the two identification lines come last');
my @memcached_names = @general;
if (-x stock_bin()) {
    my $stock = stock_memcached('-m 64');
    @memcached_names = grep { !/^_/ } keys %{ $stock->stats };
    $stock->stop;
}
my %position;
@position{@order} = 0 .. $#order;
my @after = grep { defined $position{$_} && $position{$_} > $position{server} }
    @memcached_names;
is("@after", '', 'stats: no memcached field after the identification lines');
is($st->{pid}, $server->pid, 'pid is the server pid');
is($st->{threads}, 2, 'threads reflects -t');
is($st->{max_connections}, 500, 'max_connections reflects -c');
is($st->{limit_maxbytes}, 64 * 1024 * 1024, 'limit_maxbytes reflects -m');
ok(abs($st->{time} - time) <= 2, 'time is the current unix time');
is($st->{pointer_size}, 64, 'pointer_size');
like($st->{rusage_user}, qr/^\d+\.\d{6}$/, 'rusage_user format');
is($st->{curr_items}, 2, 'curr_items');
is($st->{total_items}, 2, 'total_items');
is($st->{cmd_get}, 2, 'cmd_get');
is($st->{get_hits}, 1, 'get_hits');
is($st->{get_misses}, 1, 'get_misses');
is($st->{cmd_set}, 2, 'cmd_set');
cmp_ok($st->{bytes}, '>', 5005, 'bytes counts stored items');
cmp_ok($st->{bytes_read}, '>', 5000, 'bytes_read');
cmp_ok($st->{bytes_written}, '>', 20, 'bytes_written');
cmp_ok($st->{curr_connections}, '>=', 1, 'curr_connections');
SKIP: {
    skip 'no stock memcached to compare with', 2
        unless -x stock_bin() && !server_is_stock();
    # listeners and clients less one, as memcached counts them: one
    # listener and three clients are 3 current; the harness's start-up
    # probe (closed) makes 5 in all.  A worker counts a connection when it
    # takes it up and uncounts it when it sees it closed, both after the
    # client's own moves (the probe's on a busy machine, a whole reply
    # later): each count is waited for, on both servers.
    my %conns;
    for my $who ('memcached', 'ours') {
        my $srv = $who eq 'ours' ? new_memcached('-U 0')
                                 : stock_memcached('-U 0');
        my @extra = map { $srv->sock } 1 .. 3;
        send_recv($_, "version\r\n") for @extra;
        my $counts = sub {
            my $st = mem_stats($extra[0]);
            return "$st->{curr_connections} $st->{total_connections}";
        };
        wait_until(10, sub { $counts->() eq '3 5' });
        $conns{$who} = $counts->();
        $srv->stop;
    }
    is($conns{memcached}, '3 5',
       'memcached: 3 current connections (a listener, three clients, less '
       . 'one), 5 in all (the start-up probe)');
    is($conns{ours}, $conns{memcached},
       'curr_connections and total_connections as memcached counts them '
       . "($conns{memcached})");
}
is($st->{accepting_conns}, 1, 'accepting_conns');
is($st->{hash_is_expanding}, 0, 'hash_is_expanding');

my $set = $server->stats('settings');
@missing = grep { !exists $set->{$_} } @settings;
is("@missing", '', 'stats settings: every field present');
is($set->{maxbytes}, 64 * 1024 * 1024, 'settings maxbytes');
is($set->{maxconns}, 500, 'settings maxconns');
is($set->{tcpport}, $server->port, 'settings tcpport');
is($set->{num_threads}, 2, 'settings num_threads');
is($set->{item_size_max}, 1024 * 1024, 'settings item_size_max');
is($set->{growth_factor}, '1.25', 'settings growth_factor');
is($set->{cas_enabled}, 'yes', 'settings cas_enabled');
is($set->{evictions}, 'on', 'settings evictions');

my $it = $server->stats('items');
my %classes;
for my $k (keys %$it) {
    $classes{$1}{$2} = $it->{$k} if $k =~ /^items:(\d+):(\w+)$/;
}
is(scalar(keys %classes), 2, 'stats items: two classes in use');
for my $cls (sort { $a <=> $b } keys %classes) {
    my @m = grep { !exists $classes{$cls}{$_} } @items;
    is("@m", '', "stats items: class $cls has every field");
    is($classes{$cls}{number}, 1, "stats items: class $cls number");
}

my $sl = $server->stats('slabs');
my %sc;
for my $k (keys %$sl) {
    $sc{$1}{$2} = $sl->{$k} if $k =~ /^(\d+):(\w+)$/;
}
ok(exists $sl->{active_slabs} && exists $sl->{total_malloced},
    'stats slabs: active_slabs and total_malloced');
cmp_ok($sl->{active_slabs}, '>=', 2, 'two active slab classes');
my $bad = 0;
for my $cls (keys %sc) {
    my @m = grep { !exists $sc{$cls}{$_} } @slabs;
    $bad++ if @m;
    diag("slab class $cls lacks @m") if @m;
}
is($bad, 0, 'stats slabs: every class has every field');
my ($small) = grep { $sc{$_}{used_chunks} && $sc{$_}{chunk_size} < 200 } keys %sc;
ok($small, 'a small class holds the small item');
cmp_ok($sc{$small}{get_hits} || 0, '>=', 1, 'per-class get_hits');
cmp_ok($sc{$small}{cmd_set} || 0, '>=', 1, 'per-class cmd_set');

like(send_recv($sock, "stats sizes\r\n"),
    qr/\A(?:STAT sizes_status disabled\r\n|(?:STAT \d+ \d+\r\n)*)END\r\n\z/,
    'stats sizes format');

my $conns = send_recv($sock, "stats conns\r\n");
like($conns, qr/\A(?:STAT \d+:(?:addr|listen_addr|state|secs_since_last_cmd) [^\r\n]+\r\n)+END\r\n\z/,
    'stats conns format');
like($conns, qr/STAT \d+:state conn_listening\r\n/, 'stats conns lists the listener');
like($conns, qr/STAT \d+:listen_addr tcp:127\.0\.0\.1:${\ $server->port}\r\n/,
    'stats conns shows our connection with its listen address');

# stats reset
reply_is(send_recv($sock, "stats reset\r\n"), "RESET\r\n", 'stats reset');
$st = $server->stats;
is($st->{cmd_get}, 0, 'cmd_get reset');
is($st->{get_hits}, 0, 'get_hits reset');
is($st->{total_items}, 0, 'total_items reset');
is($st->{curr_items}, 2, 'curr_items not reset');

# stats detail
reply_is(send_recv($sock, "stats detail on\r\n"), "OK\r\n", 'stats detail on');
send_recv($sock, "get user:1\r\n");
send_recv($sock, "set user:2 0 0 1\r\nx\r\n");
send_recv($sock, "get user:2\r\n");
send_recv($sock, "delete user:2\r\n");
send_recv($sock, "set page:1 0 0 1\r\nx\r\n");
my $d = stats_detail($sock);
is_deeply($d->{user}, { get => 2, hit => 1, set => 1, del => 1 }, 'detail: prefix user');
is_deeply($d->{page}, { get => 0, hit => 0, set => 1, del => 0 }, 'detail: prefix page');
like(send_recv($sock, "stats detail dump\r\n"),
    qr/\A(?:PREFIX \S+ get \d+ hit \d+ set \d+ del \d+\r\n)+END\r\n\z/, 'detail dump format');
reply_is(send_recv($sock, "stats detail off\r\n"), "OK\r\n", 'stats detail off');
send_recv($sock, "get user:3\r\n");
is(stats_detail($sock)->{user}{get}, 2, 'no counting while off');
reply_is(send_recv($sock, "stats detail\r\n"),
    "CLIENT_ERROR usage: stats detail on|off|dump\r\n", 'stats detail usage');

# cachedump
like(send_recv($sock, "stats cachedump $small 100\r\n"),
    qr/\A(?:ITEM \S+ \[\d+ b; \d+ s\]\r\n)*END\r\n\z/, 'cachedump format');
reply_is(send_recv($sock, "stats cachedump 99 0\r\n"),
    "CLIENT_ERROR Illegal slab id\r\n", 'cachedump bad class');
reply_is(send_recv($sock, "stats cachedump\r\n"), "CLIENT_ERROR bad command line\r\n",
    'cachedump without args');
reply_is(send_recv($sock, "stats nonsense\r\n"), "ERROR\r\n", 'unknown stats group');
$server->stop;

# -X disables cachedump
my $nx = new_memcached('-X');
my $s2 = $nx->sock;
send_recv($s2, "set a 0 0 1\r\n1\r\n");
reply_is(send_recv($s2, "stats cachedump 1 0\r\n"), "CLIENT_ERROR stats cachedump not allowed\r\n",
    '-X: cachedump refused');
is($nx->stats('settings')->{dump_enabled}, 'no', '-X: dump_enabled no');

done_testing();
