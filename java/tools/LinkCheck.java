// Static link check: does every class, method and field that the classes in
// the given jars reference exist on a classpath?  Used to verify that Spark
// connector jars built for another Spark version link against pyspark's jars.
//
//   java -cp "$PYSPARK_JARS/*" java/tools/LinkCheck.java <classpath> <jar>...
//
// <classpath>: ':'-separated entries (dirs, jars, "dir/*"), searched with the
// checked jars themselves. Uses the ASM copy shaded in pyspark (xbean-asm9).
// Prints one line per unresolved reference; exit code 1 if any.
import org.apache.xbean.asm9.*;
import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;
import java.util.jar.*;

public class LinkCheck {
  record Member(String name, String desc) {}
  static final class Info { String superName; String[] interfaces = {}; Set<Member> methods = new HashSet<>(); Set<String> fields = new HashSet<>(); }
  static URLClassLoader loader;
  static final Map<String, Optional<Info>> cache = new HashMap<>();

  static Optional<Info> info(String internal) {
    return cache.computeIfAbsent(internal, n -> {
      if (n.startsWith("[")) { Info i = new Info(); i.superName = "java/lang/Object"; return Optional.of(i); }
      try (InputStream in = loader.getResourceAsStream(n + ".class")) {
        if (in == null) return Optional.empty();
        ClassReader r = new ClassReader(in);
        Info i = new Info(); i.superName = r.getSuperName(); i.interfaces = r.getInterfaces();
        r.accept(new ClassVisitor(Opcodes.ASM9) {
          @Override public MethodVisitor visitMethod(int a, String name, String d, String s, String[] e) { i.methods.add(new Member(name, d)); return null; }
          @Override public FieldVisitor visitField(int a, String name, String d, String s, Object v) { i.fields.add(name + ":" + d); return null; }
        }, ClassReader.SKIP_CODE);
        return Optional.of(i);
      } catch (IOException e) { throw new UncheckedIOException(e); }
    });
  }

  static boolean hasMethod(String owner, Member m, Set<String> seen) {
    if (owner == null || !seen.add(owner)) return false;
    Optional<Info> oi = info(owner);
    if (oi.isEmpty()) return false;
    Info i = oi.get();
    if (i.methods.contains(m)) return true;
    // signature-polymorphic methods (MethodHandle.invoke*, VarHandle.*)
    if ((owner.equals("java/lang/invoke/MethodHandle") || owner.equals("java/lang/invoke/VarHandle"))
        && i.methods.stream().anyMatch(x -> x.name().equals(m.name()))) return true;
    if (hasMethod(i.superName, m, seen)) return true;
    for (String itf : i.interfaces) if (hasMethod(itf, m, seen)) return true;
    return false;
  }

  static boolean hasField(String owner, String f, Set<String> seen) {
    if (owner == null || !seen.add(owner)) return false;
    Optional<Info> oi = info(owner);
    if (oi.isEmpty()) return false;
    Info i = oi.get();
    if (i.fields.contains(f)) return true;
    if (hasField(i.superName, f, seen)) return true;
    for (String itf : i.interfaces) if (hasField(itf, f, seen)) return true;
    return false;
  }

  public static void main(String[] args) throws Exception {
    List<URL> urls = new ArrayList<>();
    List<String> entries = new ArrayList<>(Arrays.asList(args[0].split(":")));
    for (int k = 1; k < args.length; k++) entries.add(args[k]);
    for (String e : entries) {
      if (e.isEmpty()) continue;
      if (e.endsWith("/*")) {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Paths.get(e.substring(0, e.length() - 2)), "*.jar")) {
          for (Path p : ds) urls.add(p.toUri().toURL());
        }
      } else urls.add(Paths.get(e).toUri().toURL());
    }
    loader = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    Set<String> problems = new TreeSet<>();
    int classes = 0;
    for (int k = 1; k < args.length; k++) {
      try (JarFile jar = new JarFile(args[k])) {
        for (JarEntry je : Collections.list(jar.entries())) {
          String n = je.getName();
          if (!n.endsWith(".class") || n.startsWith("META-INF/") || n.equals("module-info.class")) continue;
          classes++;
          String self = n.substring(0, n.length() - 6);
          ClassReader r = new ClassReader(jar.getInputStream(je));
          String where = self.replace('/', '.');
          r.accept(new ClassVisitor(Opcodes.ASM9) {
            @Override public MethodVisitor visitMethod(int a, String mname, String md, String s, String[] e) {
              String at = where + "." + mname;
              return new MethodVisitor(Opcodes.ASM9) {
                void cls(String owner) {
                  String o = owner; while (o.startsWith("[")) o = o.substring(1);
                  if (o.startsWith("L") && o.endsWith(";")) o = o.substring(1, o.length() - 1);
                  if (o.length() == 1) return;
                  if (info(o).isEmpty()) problems.add("missing class " + o.replace('/', '.') + "  (from " + at + ")");
                }
                @Override public void visitMethodInsn(int op, String owner, String name, String desc, boolean itf) {
                  cls(owner);
                  if (owner.startsWith("[") || info(owner).isEmpty()) return;
                  if (!hasMethod(owner, new Member(name, desc), new HashSet<>()))
                    problems.add("missing method " + owner.replace('/', '.') + "." + name + desc + "  (from " + at + ")");
                }
                @Override public void visitFieldInsn(int op, String owner, String name, String desc) {
                  cls(owner);
                  if (info(owner).isEmpty()) return;
                  if (!hasField(owner, name + ":" + desc, new HashSet<>()))
                    problems.add("missing field " + owner.replace('/', '.') + "." + name + ":" + desc + "  (from " + at + ")");
                }
                @Override public void visitTypeInsn(int op, String type) { cls(type); }
              };
            }
          }, 0);
        }
      }
    }
    for (String p : problems) System.out.println(p);
    System.out.println("checked " + classes + " classes: " + problems.size() + " unresolved references");
    System.exit(problems.isEmpty() ? 0 : 1);
  }
}
