package etl.jvm;

import java.util.function.Function;

/**
 * State kept per plan literal and thread, found without a ThreadLocal.
 *
 * <p>A static call of etl's gets its configuration as a literal of the plan (a spec, a schema), which every task
 * deserializes into its own object, used by the one thread running the task. Keyed by that object's identity and
 * the thread, a value here holds what the task needs between rows (a parsed spec, buffers, a regex matcher):
 * one identity-hashed slot read per row. ThreadLocal lookups cost more on Spark's task threads, which carry many
 * thread locals (measured: 10 % of a grok pipeline's JVM time in ThreadLocalMap.getEntryAfterMiss). A slot taken
 * by another key or thread is simply replaced: `make` builds the value again (callers cache what is costly to
 * build by content).
 */
final class PerTask<K, V> {
    private static final int SLOTS = 256;

    private static final class Slot<K, V> {
        final K key;
        final Thread owner;
        final V value;

        Slot(K key, Thread owner, V value) {
            this.key = key;
            this.owner = owner;
            this.value = value;
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})  // an array of a generic class is made raw
    private final Slot<K, V>[] slots = new Slot[SLOTS];

    V get(K key, Function<K, V> make) {
        Thread me = Thread.currentThread();
        int i = (System.identityHashCode(key) ^ System.identityHashCode(me)) & (SLOTS - 1);
        Slot<K, V> s = slots[i];  // a racy read sees a whole slot or an older one: both are checked
        if (s != null && s.key == key && s.owner == me) return s.value;
        V v = make.apply(key);
        slots[i] = new Slot<>(key, me, v);
        return v;
    }
}
