package tiercached.ycsb;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.TimeUnit;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.CASResponse;
import net.spy.memcached.CASValue;
import net.spy.memcached.ConnectionFactoryBuilder;
import net.spy.memcached.FailureMode;
import net.spy.memcached.MemcachedClient;
import net.spy.memcached.transcoders.Transcoder;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding for memcached-compatible servers (tiercached, stock
 * memcached) on spymemcached.
 *
 * A record is one memcached item whose value is the record's fields
 * serialised as (UTF name, int length, bytes)*, so a read costs one GET
 * and an update is a read-modify-write protected by CAS (gets + cas,
 * retried). The table name is ignored: memcached has one key space.
 * Scans are not supported (memcached has no ordered keys).
 *
 * Properties:
 *   memcached.hosts            host:port list, "127.0.0.1:11211"
 *   memcached.protocol         text | binary (text)
 *   memcached.opTimeoutMillis  per operation (5000)
 *   memcached.expiration       seconds, 0 = never (0)
 *   memcached.casRetries       update attempts under contention (10)
 */
public class SpyMemcachedClient extends DB {
    private MemcachedClient client;
    private int expiration;
    private int casRetries;
    private long opTimeoutMillis;
    private final Transcoder<byte[]> codec = new RawTranscoder();

    @Override
    public void init() throws DBException {
        Properties p = getProperties();
        String hosts = p.getProperty("memcached.hosts", "127.0.0.1:11211");
        String protocol = p.getProperty("memcached.protocol", "text");
        opTimeoutMillis = Long.parseLong(p.getProperty("memcached.opTimeoutMillis", "5000"));
        expiration = Integer.parseInt(p.getProperty("memcached.expiration", "0"));
        casRetries = Integer.parseInt(p.getProperty("memcached.casRetries", "10"));
        ConnectionFactoryBuilder b = new ConnectionFactoryBuilder()
            .setProtocol("binary".equals(protocol)
                ? ConnectionFactoryBuilder.Protocol.BINARY
                : ConnectionFactoryBuilder.Protocol.TEXT)
            .setOpTimeout(opTimeoutMillis)
            .setFailureMode(FailureMode.Retry)
            .setDaemon(true);
        try {
            List<InetSocketAddress> addrs = AddrUtil.getAddresses(hosts);
            client = new MemcachedClient(b.build(), addrs);
        } catch (IOException | IllegalArgumentException e) {
            throw new DBException("cannot connect to " + hosts + ": " + e, e);
        }
    }

    @Override
    public void cleanup() throws DBException {
        if (client != null) {
            client.shutdown(opTimeoutMillis, TimeUnit.MILLISECONDS);
            client = null;
        }
    }

    @Override
    public Status read(String table, String key, Set<String> fields,
                       Map<String, ByteIterator> result) {
        try {
            byte[] v = client.get(key, codec);
            if (v == null) {
                return Status.NOT_FOUND;
            }
            Map<String, byte[]> rec = decode(v);
            for (Map.Entry<String, byte[]> e : rec.entrySet()) {
                if (fields == null || fields.contains(e.getKey())) {
                    result.put(e.getKey(), new ByteArrayByteIterator(e.getValue()));
                }
            }
            return Status.OK;
        } catch (RuntimeException | IOException e) {
            return error("read", key, e);
        }
    }

    @Override
    public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                       Vector<HashMap<String, ByteIterator>> result) {
        return Status.NOT_IMPLEMENTED;
    }

    @Override
    public Status update(String table, String key, Map<String, ByteIterator> values) {
        try {
            for (int i = 0; i < casRetries; i++) {
                CASValue<byte[]> cur = client.gets(key, codec);
                if (cur == null) {
                    return Status.NOT_FOUND;
                }
                Map<String, byte[]> rec = decode(cur.getValue());
                for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
                    rec.put(e.getKey(), e.getValue().toArray());
                }
                CASResponse r = client.cas(key, cur.getCas(), expiration, encode(rec), codec);
                if (r == CASResponse.OK) {
                    return Status.OK;
                }
                if (r == CASResponse.NOT_FOUND) {
                    return Status.NOT_FOUND;
                }
            }
            return Status.UNEXPECTED_STATE;
        } catch (RuntimeException | IOException e) {
            return error("update", key, e);
        }
    }

    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
        try {
            Map<String, byte[]> rec = new HashMap<>();
            for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
                rec.put(e.getKey(), e.getValue().toArray());
            }
            boolean ok = client.set(key, expiration, encode(rec), codec).get();
            return ok ? Status.OK : Status.ERROR;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return error("insert", key, e);
        } catch (Exception e) {
            return error("insert", key, e);
        }
    }

    @Override
    public Status delete(String table, String key) {
        try {
            return client.delete(key).get() ? Status.OK : Status.NOT_FOUND;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return error("delete", key, e);
        } catch (Exception e) {
            return error("delete", key, e);
        }
    }

    private static Status error(String op, String key, Exception e) {
        System.err.println("memcached " + op + " " + key + ": " + e);
        return Status.ERROR;
    }

    static byte[] encode(Map<String, byte[]> rec) throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bos)) {
            for (Map.Entry<String, byte[]> e : rec.entrySet()) {
                out.writeUTF(e.getKey());
                out.writeInt(e.getValue().length);
                out.write(e.getValue());
            }
        }
        return bos.toByteArray();
    }

    static Map<String, byte[]> decode(byte[] v) throws IOException {
        Map<String, byte[]> rec = new HashMap<>();
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(v))) {
            while (in.available() > 0) {
                String name = in.readUTF();
                int n = in.readInt();
                if (n < 0 || n > in.available()) {
                    throw new IOException("corrupt record: field " + name + " of " + n + " bytes");
                }
                byte[] b = new byte[n];
                in.readFully(b);
                rec.put(name, b);
            }
        }
        return rec;
    }

    /** Stores the bytes as they are, flags 0 (no serialisation, no compression). */
    static final class RawTranscoder implements Transcoder<byte[]> {
        @Override
        public boolean asyncDecode(net.spy.memcached.CachedData d) {
            return false;
        }

        @Override
        public net.spy.memcached.CachedData encode(byte[] o) {
            return new net.spy.memcached.CachedData(0, o, getMaxSize());
        }

        @Override
        public byte[] decode(net.spy.memcached.CachedData d) {
            return d.getData();
        }

        @Override
        public int getMaxSize() {
            return net.spy.memcached.CachedData.MAX_SIZE;
        }
    }
}
