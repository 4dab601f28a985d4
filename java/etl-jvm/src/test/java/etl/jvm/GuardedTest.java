package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.codegen.GenerateUnsafeProjection;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/** Guarded: struct<value, error>, never NULL, never throwing; the error one line naming Spark's condition. */
class GuardedTest {
    static final String CAST = "CAST_INVALID_INPUT: The value 'x' of the type \"STRING\" cannot be cast to \"INT\" "
        + "because it is malformed. Correct the value as per the syntax, or change its target type. Use `try_cast` to "
        + "tolerate malformed input and return NULL instead.";

    private static Guarded castToInt(String text) {
        return new Guarded(new Cast(Literal.create(text, DataTypes.StringType), DataTypes.IntegerType,
            scala.Option.empty(), EvalMode.ANSI()));
    }

    @Test
    void theErrorStructHasTheChildsValueTypeAndAStringError() {
        Guarded g = castToInt("1");
        StructType t = (StructType) g.dataType();
        assertEquals(List.of("value", "error"), List.of(t.fieldNames()));
        assertEquals(DataTypes.IntegerType, t.fields()[0].dataType());
        assertEquals(DataTypes.StringType, t.fields()[1].dataType());
        assertFalse(g.nullable());
        assertEquals("etl_guarded", g.prettyName());
    }

    @Test
    void interpretedEvalCatchesAnAnsiFailure() {
        InternalRow ok = (InternalRow) castToInt("12").eval(InternalRow.empty());
        assertEquals(12, ok.getInt(0));
        assertTrue(ok.isNullAt(1));
        InternalRow bad = (InternalRow) castToInt("x").eval(InternalRow.empty());
        assertTrue(bad.isNullAt(0));
        assertEquals(CAST, bad.getUTF8String(1).toString());
    }

    @Test
    void generatedCodeCatchesItToo() {
        List<Expression> exprs = List.of(castToInt("x"), castToInt("7"));
        UnsafeProjection p = GenerateUnsafeProjection.generate(
            scala.jdk.javaapi.CollectionConverters.asScala(exprs).toList(), false);
        InternalRow out = p.apply(InternalRow.empty());
        InternalRow bad = out.getStruct(0, 2), ok = out.getStruct(1, 2);
        assertTrue(bad.isNullAt(0));
        assertEquals(CAST, bad.getUTF8String(1).toString());
        assertEquals(7, ok.getInt(0));
        assertTrue(ok.isNullAt(1));
    }

    @Test
    void describeDropsTheConditionsBracketsAndSqlState() {
        Cast bare = new Cast(Literal.create("x", DataTypes.StringType), DataTypes.IntegerType, scala.Option.empty(),
            EvalMode.ANSI());
        RuntimeException e = assertThrows(RuntimeException.class, () -> bare.eval(InternalRow.empty()));
        assertTrue(e.getMessage().startsWith("[CAST_INVALID_INPUT] The value 'x'"), e.getMessage());
        assertTrue(e.getMessage().contains(" SQLSTATE: 22018"), e.getMessage());
        assertEquals(CAST, Guarded.describe(e).toString());
    }

    @Test
    void describeIsOneLine() {
        assertEquals("java.lang.IllegalStateException: boom",
            Guarded.describe(new IllegalStateException("  boom \nat line 2")).toString());
        assertEquals("java.lang.NullPointerException", Guarded.describe(new NullPointerException()).toString());
        assertEquals("java.lang.ArithmeticException", Guarded.describe(new ArithmeticException("")).toString());
    }
}
