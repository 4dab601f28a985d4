package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** Grok specs written by etl.components.transforms.grok.build give the captures Python's re gives (grok's reference). */
class GrokTest {
    private static final JsonNode GROK = Fixtures.read("grok.json");

    private static List<String> strings(ArrayData a) {
        if (a == null) return null;
        List<String> out = new ArrayList<>();
        for (int i = 0; i < a.numElements(); i++) out.add(a.isNullAt(i) ? null : a.getUTF8String(i).toString());
        return out;
    }

    private static List<String> expected(JsonNode c) {
        JsonNode caps = c.get("captures");
        if (caps.isNull()) return null;
        List<String> out = new ArrayList<>();
        caps.forEach(x -> out.add(x.isNull() ? null : x.asText()));
        return out;
    }

    @Test
    void capturesAreThoseOfPythonsRe() {
        int lines = 0, matched = 0;
        for (JsonNode p : GROK.get("patterns")) {
            for (String key : new String[] {"spec", "spec_with_program"}) {
                byte[] spec = Fixtures.unhex(p.get(key).asText());
                for (JsonNode c : p.get("cases")) {
                    List<String> got = strings(Grok.captures(UTF8String.fromString(c.get("line").asText()), spec));
                    assertEquals(expected(c), got, p.get("pattern").asText() + " " + key + " " + c);
                    lines++;
                    if (got != null) matched++;
                }
            }
        }
        assertEquals(2 * 19, lines);
        assertEquals(2 * 14, matched);
    }

    @Test
    void theMatcherProgramAnswersAsciiLinesItself() {
        JsonNode p = GROK.get("patterns").get(0);
        assertTrue(p.get("has_program").asBoolean());
        Grok.Spec spec = new Grok.Spec(Fixtures.unhex(p.get("spec_with_program").asText()));
        assertNotNull(spec.program);
        byte[] line = "55.3.244.1 GET /index.html 15824 0.043".getBytes(StandardCharsets.US_ASCII);
        int[] spans = new int[2 * (spec.program.groups + 1)];
        assertTrue(spec.program.run(line, Platform.BYTE_ARRAY_OFFSET, line.length, spans));
        List<String> got = new ArrayList<>();
        for (int g : spec.groups) got.add(spans[2 * g] < 0 ? null : new String(line, spans[2 * g], spans[2 * g + 1] - spans[2 * g], StandardCharsets.US_ASCII));
        assertEquals(List.of("55.3.244.1", "GET", "/index.html", "15824", "0.043"), got);
        long before = Grok.regexLines();
        byte[] raw = Fixtures.unhex(p.get("spec_with_program").asText());
        Grok.captures(UTF8String.fromString("10.0.0.1 POST /a?b=c 0 1"), raw);
        assertEquals(before, Grok.regexLines());  // the program answered: the regex did not run
    }

    private static byte[] spec(String regex, int... groups) {
        byte[] rx = regex.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + rx.length + 2 + 2 * groups.length + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.put("EGS1".getBytes(StandardCharsets.US_ASCII)).putInt(rx.length).put(rx).putShort((short) groups.length);
        for (int g : groups) b.putShort((short) g);
        b.putInt(0);
        return b.array();
    }

    @Test
    void aRegexThatRunsPastItsBudgetGivesUpWithOneMoreElement() {
        // %{GREEDYDATA:a}x%{GREEDYDATA:b}y%{GREEDYDATA}z%{GREEDYDATA}!$ (tests/spark/test_grok_native.py): on this
        // line java.util.regex would backtrack for hours; it stops at its step budget
        byte[] s = spec("(.*)x(.*)y.*z.*!$", 1, 2);
        ArrayData got = Grok.captures(UTF8String.fromString("\u00e9" + "xyz".repeat(300)), s);
        assertNotNull(got);
        assertEquals(3, got.numElements());
        for (int i = 0; i < 3; i++) assertTrue(got.isNullAt(i));
        assertEquals(List.of("\u00e9axbyc ", "d"), strings(Grok.captures(UTF8String.fromString("\u00e9axbyc xdyz!"), s)));
        assertNull(Grok.captures(UTF8String.fromString("\u00e9xyz"), s));
    }

    @Test
    void nonAsciiLinesAreCutByCharacters() {
        byte[] s = spec("(\\S+) (\\S+)", 2, 1);
        assertEquals(List.of("\u00e9t\u00e9", "caf\u00e9"), strings(Grok.captures(UTF8String.fromString("caf\u00e9 \u00e9t\u00e9"), s)));
        assertArrayEquals(new Object[0], ((org.apache.spark.sql.catalyst.util.GenericArrayData)
            Grok.captures(UTF8String.fromString("x"), spec("x"))).array());
    }

    @Test
    void aSpecOfAnotherFormatIsRefused() {
        ByteArrayOutputStream bad = new ByteArrayOutputStream();
        bad.writeBytes("EGS2".getBytes(StandardCharsets.US_ASCII));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Grok.Spec(bad.toByteArray()));
        assertEquals("etl: not a grok spec", e.getMessage());
    }
}
