package etl.jvm;

import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.ConditionalExpression;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.Seq;

/**
 * A row-level guard around one expression of a pipeline: struct&lt;value, error&gt;, never NULL, never throwing.
 *
 * <p>The child is evaluated inside try/catch, in generated code as interpreted: `value` is its result (NULL when
 * it failed) and `error` NULL, or the failure as one line (`describe`). Spark 4 runs with ANSI SQL on, so a bad
 * cast, a division by zero, an unparsable timestamp or an overflow throws; guarded, it makes its row a dead
 * letter instead of failing the task.
 *
 * <p>Written against Expression (not UnaryExpression, whose final Scala forwarders javac cannot override).
 * A ConditionalExpression with no always-evaluated inputs and no branch groups: subexpression elimination never
 * recurses into the child, so no part of it is hoisted out of the try block (EquivalentExpressions.childrenToRecurse).
 */
public final class Guarded extends Expression implements ConditionalExpression, java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private final Expression child;

    public Guarded(Expression child) {
        this.child = child;
    }

    /** The failure as one line: a Spark error's condition and the first line of its message, else the class. */
    public static UTF8String describe(Throwable t) {
        String msg = t.getMessage() == null ? "" : t.getMessage().strip();
        int nl = msg.indexOf('\n');
        String first = (nl >= 0 ? msg.substring(0, nl) : msg).strip();
        if (t instanceof SparkThrowable && ((SparkThrowable) t).getCondition() != null) {
            String cond = ((SparkThrowable) t).getCondition();
            if (first.startsWith("[")) {
                int end = first.indexOf("] ");
                if (end > 0) first = first.substring(end + 2);
            }
            int state = first.lastIndexOf(" SQLSTATE: ");
            if (state > 0) first = first.substring(0, state);
            return UTF8String.fromString(cond + ": " + first);
        }
        String name = t.getClass().getName();
        return UTF8String.fromString(first.isEmpty() ? name : name + ": " + first);
    }

    static StructType type(DataType value) {
        return new StructType(new StructField[] {
            DataTypes.createStructField("value", value, true),
            DataTypes.createStructField("error", DataTypes.StringType, true)});
    }

    public Expression child() {
        return child;
    }

    @Override
    public Seq<Expression> children() {
        return seq(child);
    }

    @Override
    public DataType dataType() {
        return type(child.dataType());
    }

    @Override
    public boolean nullable() {
        return false;
    }

    @Override
    public boolean foldable() {
        return false;
    }

    @Override
    public Object eval(InternalRow input) {
        try {
            return new GenericInternalRow(new Object[] {child.eval(input), null});
        } catch (Throwable t) {
            return new GenericInternalRow(new Object[] {null, describe(t)});
        }
    }

    @Override
    public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        ExprCode c = child.genCode(ctx);
        DataType dt = child.dataType();
        String boxed = CodeGenerator.isPrimitiveType(dt)
            ? CodeGenerator.boxedType(dt) + ".valueOf(" + c.value() + ")" : "(Object) " + c.value();
        String row = GenericInternalRow.class.getName();
        String v = ev.value().toString();
        String t = ctx.freshName("guardFailure");
        String code = InternalRow.class.getName() + " " + v + ";\n"
            + "try {\n" + c.code() + "\n"
            + v + " = new " + row + "(new Object[] {" + c.isNull() + " ? null : " + boxed + ", null});\n"
            + "} catch (Throwable " + t + ") {\n"
            + v + " = new " + row + "(new Object[] {null, " + Guarded.class.getName() + ".describe(" + t + ")});\n"
            + "}\n";
        CodeBlock block = new CodeBlock(seq(code), seq());
        return new ExprCode(block, FalseLiteral$.MODULE$, JavaCode.variable(v, dataType()));
    }

    @SafeVarargs
    private static <T> Seq<T> seq(T... items) {
        java.util.List<T> list = new java.util.ArrayList<>(items.length);  // the array itself never escapes
        for (T item : items) {
            list.add(item);
        }
        return scala.jdk.javaapi.CollectionConverters.asScala(list).toList();
    }

    @Override
    public Expression withNewChildrenInternal(scala.collection.immutable.IndexedSeq<Expression> newChildren) {
        return new Guarded(newChildren.apply(0));
    }

    @Override
    public Seq<Expression> alwaysEvaluatedInputs() {
        return seq();
    }

    @Override
    public ConditionalExpression withNewAlwaysEvaluatedInputs(Seq<Expression> inputs) {
        return this;
    }

    @Override
    public Seq<Seq<Expression>> branchGroups() {
        return seq();
    }

    @Override
    public String prettyName() {
        return "etl_guarded";
    }

    @Override
    public int productArity() {
        return 1;
    }

    @Override
    public Object productElement(int n) {
        if (n != 0) throw new IndexOutOfBoundsException(String.valueOf(n));
        return child;
    }

    @Override
    public boolean canEqual(Object other) {
        return other instanceof Guarded;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Guarded && child.equals(((Guarded) other).child);
    }

    @Override
    public int hashCode() {
        return 31 * child.hashCode() + 7;
    }
}
