package etl.jvm;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.filter.AbstractFilter;

/**
 * A log4j filter that keeps Spark quiet about a task stopped by a rule pattern's step budget, or by a row's data
 * error in a stage that etl evaluates optimistically (unguarded first, again with guards when a row fails).
 *
 * <p>Such a task fails on purpose ({@link RuleMatch.Exhausted}): etl moves the rule set to its Python path and
 * runs the micro-batch again, and says so in one warning of its own (etl/compile/rules_jvm.py). Spark would log
 * the failure three times first, as if the query were lost: the executor's ERROR "Exception in task" with the
 * stack, the scheduler's WARN "Lost task ..." and its ERROR "Task N in stage S failed K times; aborting job".
 * This filter denies exactly those events: the ones whose exception or message is a budget stop, and the
 * "aborting job" line of a stage whose lost task was one. Every other event passes untouched.
 */
public final class QuietBudget extends AbstractFilter {
    static final String MARK = RuleMatch.BUDGET_MARK + "[";
    static final String[] LOGGERS = {"org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager"};
    private static final Pattern LOST = Pattern.compile("Lost task \\S+ in stage (\\S+) ");
    private static final Pattern ABORT = Pattern.compile("Task \\S+ in stage (\\S+) failed \\d+ times; aborting job");
    private static final QuietBudget INSTANCE = new QuietBudget();

    // stages that lost a task to a budget stop, newest last (a few are enough: the abort follows the loss)
    private final Map<String, Boolean> stopped = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > 64;
        }
    };

    private QuietBudget() {
        super(Result.DENY, Result.NEUTRAL);
    }

    /** The filter (tests ask it about events). */
    public static Filter instance() {
        return INSTANCE;
    }

    /** Puts the filter on the loggers of Spark's executor and task scheduler, where it is not yet (both may share
     *  one logger config, the root's; a reconfigured context has new ones). */
    public static synchronized void install() {
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        Configuration config = ctx.getConfiguration();
        boolean added = false;
        for (String name : LOGGERS) {
            LoggerConfig lc = config.getLoggerConfig(name);
            if (!holds(lc.getFilter())) {
                lc.addFilter(INSTANCE);
                added = true;
            }
        }
        if (added) ctx.updateLoggers();
    }

    private static boolean holds(Filter f) {
        if (f == INSTANCE) return true;
        if (f instanceof org.apache.logging.log4j.core.filter.CompositeFilter c) {
            for (Filter x : c.getFiltersArray()) if (x == INSTANCE) return true;
        }
        return false;
    }

    /** Is this a budget stop, or did the exception come out of one? Or a row's data error (SQLSTATE class 22:
     *  a bad cast, a division by zero, an overflow, a bad datetime), after which etl evaluates the batch again
     *  with guards (etl/compile/guard.py) and the row becomes a dead letter? */
    static boolean budgetStop(Throwable t) {
        for (int depth = 0; t != null && depth < 16; t = t.getCause(), depth++) {
            if (t instanceof RuleMatch.Exhausted || rowError(t)) return true;
        }
        return false;
    }

    static boolean rowError(Throwable t) {
        if (t instanceof org.apache.spark.SparkThrowable s) {
            String state = s.getSqlState();
            return state != null && state.startsWith("22");
        }
        return t instanceof ArithmeticException || t instanceof java.time.DateTimeException;
    }

    @Override
    public Result filter(LogEvent event) {
        if (budgetStop(event.getThrown())) return onMatch;
        String text = event.getMessage() == null ? null : event.getMessage().getFormattedMessage();
        if (text == null) return onMismatch;
        if (text.contains(MARK) || (text.contains(" SQLSTATE: 22") && LOST.matcher(text).find())) {
            Matcher m = LOST.matcher(text);
            if (m.find()) {
                synchronized (stopped) {
                    stopped.put(m.group(1), Boolean.TRUE);
                }
            }
            return onMatch;
        }
        Matcher m = ABORT.matcher(text);
        if (m.find()) {
            synchronized (stopped) {
                if (stopped.remove(m.group(1)) != null) return onMatch;
            }
        }
        return onMismatch;
    }
}
