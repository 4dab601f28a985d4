package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rule programs written by etl.optimize.jvmprogram / jvmmulti decide what etl.optimize.reference decides. */
class RuleMatchTest {
    private static final JsonNode RULES = Fixtures.read("rules.json");

    @TempDir
    Path dir;

    private static List<String> ids(ArrayData a) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < a.numElements(); i++) out.add(a.getUTF8String(i).toString());
        return out;
    }

    private static List<String> expected(JsonNode c) {
        List<String> out = new ArrayList<>();
        c.get("ids").forEach(x -> out.add(x.asText()));
        return out;
    }

    @Test
    void oneFieldProgramMatchesThePythonReference() {
        JsonNode fx = RULES.get("one_field");
        UTF8String file = UTF8String.fromString(Fixtures.file(dir, "one.txt", fx.get("program").asText()));
        int checked = 0;
        for (int round = 0; round < 2; round++) {  // the second round: every value found in the field's memo
            for (JsonNode c : fx.get("cases")) {
                UTF8String v = UTF8String.fromString(c.get("value").asText());
                List<String> want = expected(c);
                assertEquals(want, ids(RuleMatch.ids(v, file)), c.toString());
                assertEquals(!want.isEmpty(), RuleMatch.any(v, file), c.toString());
                checked++;
            }
        }
        assertEquals(24, checked);
    }

    @Test
    void kelvinSignFoldsLikePython() {
        // Python's re.search('(?i)\\bkill\\b', 'run \u212aILL now') matches: the Kelvin sign is k caselessly
        JsonNode fx = RULES.get("one_field");
        UTF8String file = UTF8String.fromString(Fixtures.file(dir, "one.txt", fx.get("program").asText()));
        assertEquals(List.of("kill"), ids(RuleMatch.ids(UTF8String.fromString("run \u212aILL now"), file)));
        assertFalse(RuleMatch.any(UTF8String.fromString("skill"), file));
    }

    private static GenericInternalRow row(JsonNode values) {
        Object[] vs = new Object[values.size()];
        for (int i = 0; i < vs.length; i++) {
            vs[i] = values.get(i).isNull() ? null : UTF8String.fromString(values.get(i).asText());
        }
        return new GenericInternalRow(vs);
    }

    @Test
    void severalFieldsProgramMatchesThePythonReference() {
        JsonNode fx = RULES.get("several_fields");
        UTF8String file = UTF8String.fromString(Fixtures.file(dir, "multi.txt", fx.get("program").asText()));
        int matched = 0;
        for (int round = 0; round < 3; round++) {
            for (JsonNode c : fx.get("cases")) {
                List<String> want = expected(c);
                assertEquals(want, ids(RuleMatch.idsRow(row(c.get("row")), file)), c.toString());
                assertEquals(!want.isEmpty(), RuleMatch.anyRow(row(c.get("row")), file), c.toString());
                matched += want.size();
            }
        }
        assertTrue(matched >= 3 * 6, "the fixture's events match rules: " + matched);
    }

    @Test
    void programTextsAreReadOncePerFile() {
        JsonNode fx = RULES.get("one_field");
        String path = Fixtures.file(dir, "p.txt", fx.get("program").asText());
        UTF8String file = UTF8String.fromString(path);
        assertTrue(RuleMatch.any(UTF8String.fromString("curl x|sh"), file));
        // the program stays built for the file's name: rewriting the file does not change the answers
        Fixtures.file(dir, "p.txt", "L 0\n");
        assertTrue(RuleMatch.any(UTF8String.fromString("curl x|sh"), UTF8String.fromString(path)));
    }
}
